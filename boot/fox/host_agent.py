"""A cluster's agent on a host other than the supervisor's (fox across hosts, DESIGN.md).

    python3 -m fox.host_agent --cluster NAME --vni V --peers A,B,... --dir DIR

The supervisor starts one per other host of its cluster (with `srun` inside a Slurm
allocation: hosts.py) and speaks with it in JSON lines over its standard input and output,
which the launcher carries. On this host it owns the cluster's network and the QEMUs of the
nodes that live here:

  - a network namespace (its name printed in "ready") holding br0, a Linux bridge, and vx0, a
    VXLAN device (VNI `--vni`, UDP 4789) created in this host's own namespace, where its
    encapsulated frames travel, and moved into the cluster's: br0 here and the supervisor's
    host's br0 (dnsmasq, the switch, place 0's side) are one Ethernet segment. Every peer
    address (--peers: the other hosts' addresses) gets an all-zeros FDB entry, so broadcasts
    (ARP, DHCP) reach every host and the bridges learn where each node's MAC is: nodes on two
    hosts talk directly, host to host, not through the supervisor's host;
  - tapK per node K here, a port of br0, and node K's QEMU in the namespace (it dies with this
    agent: PR_SET_PDEATHSIG), its console in DIR/nodeK.log, forwarded as it grows.

Requests (one object per line):
    {"op": "boot", "node": K, "boot": B, "image", "append", "cores", "mem", "accel", "pxe"}
    {"op": "kill", "node": K, "boot": B}     SIGKILL of that boot's QEMU (its exit follows)
A boot of node K supersedes K's previous one: a QEMU of K still running is killed first (its
exit reported). Every boot ends in exactly one "exit": QEMU's, or at once with rc -1 (after an
"error" saying why) when its QEMU could not be started (a malformed request, a tap that could
not be made, a QEMU that would not run).
Events:
    {"event": "ready", "host": NAME, "address": A, "netns": NS}
    {"event": "exit", "node": K, "boot": B, "rc": RC}          QEMU's return code (-1: never ran)
    {"event": "console", "node": K, "data": BASE64}            what its console gained
    {"event": "error", "error": TEXT}                           a request it could not do
The end of its input (the supervisor gone, or `fox cluster down`), SIGTERM or SIGHUP (the
allocation's end) stops every QEMU and removes the namespace; nothing is left on this host.
"""
import argparse
import base64
import json
import os
import selectors
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from fox import netns, nodes, state  # noqa: E402

CONSOLE_CHUNK = 32768
VXLAN_PORT = 4789


def out(**message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


class Qemu:
    def __init__(self, k, boot, proc, console, errors_at):
        self.k = k
        self.boot = boot
        self.proc = proc
        self.pidfd = os.pidfd_open(proc.pid)
        self.console = console
        self.sent = os.path.getsize(console) if os.path.exists(console) else 0
        self.errors_at = errors_at  # where this boot's lines start in nodeK.qemu.log


class Agent:
    def __init__(self, args):
        self.args = args
        self.host = socket.gethostname()
        self.dir = args.dir
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        self.net = netns.BridgeNetwork(args.cluster, self.dir, dhcp=False, host=":" + self.host)
        self.sel = selectors.DefaultSelector()
        self.qemus = {}  # node -> Qemu
        self.stopping = False
        self.input = b""

    def run(self):
        state.stop_on_signals(self.sel, lambda: setattr(self, "stopping", True))
        try:
            peers = [p for p in self.args.peers.split(",") if p]
            address = netns.local_address(peers[0]) if peers else None
            self.net.up()
            self.net.add_vxlan(self.args.vni, address, [p for p in peers if p != address])
            out(event="ready", host=self.host, address=address, netns=self.net.ns)
            os.set_blocking(sys.stdin.fileno(), False)
            self.sel.register(sys.stdin.fileno(), selectors.EVENT_READ, self.on_input)
            while not self.stopping:
                for key, _ in self.sel.select(0.05):
                    key.data()
                self.forward_consoles()
        except (netns.NetError, OSError) as e:
            out(event="error", error="host %s: %s" % (self.host, e))
        finally:
            self.shut_down()

    def on_input(self):
        try:
            chunk = os.read(sys.stdin.fileno(), 65536)
        except BlockingIOError:
            return
        if not chunk:
            self.stopping = True  # the supervisor is gone
            return
        self.input += chunk
        while b"\n" in self.input:
            line, self.input = self.input.split(b"\n", 1)
            request = None
            try:
                request = json.loads(line)
                self.handle(request)
            except (ValueError, KeyError, TypeError, AttributeError, OSError, netns.NetError) as e:
                what = "bad request"
                if isinstance(request, dict) and request.get("op") == "boot":
                    what = "boot %s of node %s failed" % (request.get("boot"), request.get("node"))
                out(event="error", error="host %s: %s: %s" % (self.host, what, e))
                self.boot_failed(request)

    def boot_failed(self, request):
        """A boot request that started no QEMU still ends: its exit (rc -1), when it names its node
        and boot, so the supervisor does not wait for it forever."""
        if not isinstance(request, dict) or request.get("op") != "boot":
            return
        try:
            k, boot = int(request["node"]), int(request["boot"])
        except (KeyError, TypeError, ValueError):
            return
        q = self.qemus.get(k)
        if q is not None and q.boot == boot:
            return  # its QEMU runs (the failure came after): its own exit will follow
        out(event="exit", node=k, boot=boot, rc=-1)

    def handle(self, r):
        if r["op"] == "boot":
            self.boot(int(r["node"]), int(r["boot"]), str(r["image"]), str(r["append"]), int(r["cores"]),
                      int(r["mem"]), str(r["accel"]), bool(r.get("pxe")))
        elif r["op"] == "kill":
            q = self.qemus.get(int(r["node"]))
            if q is not None and q.boot == int(r["boot"]) and q.proc.poll() is None:
                q.proc.kill()
        else:
            raise ValueError("unknown op %r" % r["op"])

    def boot(self, k, boot, image, append, cores, mem, accel, pxe):
        old = self.qemus.get(k)
        if old is not None and old.pidfd is not None:  # superseded: it ends (and says so) first
            if old.proc.poll() is None:
                old.proc.kill()
            self.on_exit(old)
        if not pxe and not os.path.isfile(image):
            raise ValueError("node %d's image %s is not on this host (fox across hosts wants the build on a "
                             "filesystem every host shares, at the same path)" % (k, image))
        tap = "tap%d" % k
        if not self.net.has_link(tap):
            self.net.add_node(k, nodes.node_mac(k), nodes.node_ip(k))
        console = os.path.join(self.dir, "node%d.log" % k)
        cmd = nodes.qemu_command(self.args.cluster, k, image, append, cores, mem, accel, console, 0, None, tap=tap,
                                 pxe=pxe)
        with open(os.path.join(self.dir, "node%d.qemu.log" % k), "ab") as err:
            errors_at = err.tell()
            proc = subprocess.Popen(["setpriv", "--pdeathsig", "KILL", "--"] + self.net.exec_prefix() + cmd,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                    start_new_session=True)
        try:
            q = Qemu(k, boot, proc, console, errors_at)
        except OSError:
            proc.kill()  # untracked, it would outlive the agent's notice
            proc.wait()
            raise
        self.qemus[k] = q
        self.sel.register(q.pidfd, selectors.EVENT_READ, lambda: self.on_exit(q))

    def on_exit(self, q):
        rc = q.proc.wait()
        self.sel.unregister(q.pidfd)
        os.close(q.pidfd)
        q.pidfd = None
        self.forward_console(q)
        said = self.qemu_said(q)
        if said:
            out(event="error", error="host %s: node %d's QEMU (boot %d) said: %s" % (self.host, q.k, q.boot, said))
        out(event="exit", node=q.k, boot=q.boot, rc=rc)

    def qemu_said(self, q):
        """The last lines QEMU wrote to its standard error in this boot (nodeK.qemu.log), if any."""
        try:
            with open(os.path.join(self.dir, "node%d.qemu.log" % q.k), "rb") as f:
                f.seek(q.errors_at)
                text = f.read(65536).decode(errors="replace").strip()
        except OSError:
            return ""
        return " / ".join(text.splitlines()[-3:])[:500]

    def forward_consoles(self):
        for q in self.qemus.values():
            self.forward_console(q)

    def forward_console(self, q):
        try:
            with open(q.console, "rb") as f:
                f.seek(q.sent)
                while True:
                    data = f.read(CONSOLE_CHUNK)
                    if not data:
                        break
                    q.sent += len(data)
                    out(event="console", node=q.k, data=base64.b64encode(data).decode())
        except OSError:
            pass

    def shut_down(self):
        for q in self.qemus.values():
            if q.proc.poll() is None:
                q.proc.kill()
        for q in self.qemus.values():
            q.proc.wait()
        self.net.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cluster", required=True)
    ap.add_argument("--vni", type=int, required=True)
    ap.add_argument("--peers", default="", help="the other hosts' addresses, comma-separated")
    ap.add_argument("--dir", required=True, help="where consoles go on this host")
    args = ap.parse_args()
    if os.geteuid() != 0:
        out(event="error", error="host %s: fox across hosts needs root on every host (a bridge, taps, VXLAN)" %
            socket.gethostname())
        return 1
    Agent(args).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
