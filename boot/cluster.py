#!/usr/bin/env python3
"""A local cluster of fox nodes on a private network, for cluster tests.

    cluster.py --nodes N [--image IMG] [--append "ARGS"] [--smp S] [--mem M]
               [--accel auto|kvm|tcg] [--timeout T]
               [--netem "loss 5% duplicate 5% delay 1ms 1ms"
                | --impair "loss=5 dup=5 reorder=5 delay=2 jitter=1 seed=7 udp-port=P"
                  [--require-impairment]]
               [--host-cmd CMD]... [--host-after I:REGEX] [--host-grace S] [--until-host]
               [--expect-node I:REGEX]... [--expect-exit S] [--killed I]... [--dhcp]
               [--nic modern|legacy|intx|legacy-intx] [--local] [--live] [--peers]

Creates a network namespace of its own (fox-<pid>), boots the nodes inside it
with QEMU, optionally runs host commands inside the namespace too, waits for
every node to exit, checks expectations, and removes the namespace and every
process it started, whatever happens (errors, Ctrl-C, SIGTERM; after a
SIGKILL the QEMUs die with it and the next run removes the namespace). Needs
root (CAP_NET_ADMIN). Touches no address outside the namespace.

Address plan (the same in every mode):
    host side    10.77.0.1/24 (bridge foxbr0, or the hub's tap foxhub0)
    node I       MAC 52:54:00:77:00:II (II = I in hex), IPv4 10.77.0.(10+I)/24,
                 boot args "fox.node=I fox.ip=10.77.0.(10+I)/24 fox.gw=10.77.0.1"
                 (fox.ip / fox.gw are left out when --append gives its own);
                 with --peers also fox.peers=0@10.77.0.10,1@10.77.0.11,...

Network modes:
  default    a Linux bridge foxbr0 and one tap per node (-netdev tap).
  --netem    the same, with `tc qdisc ... netem ARGS` on every tap; skipped
             (exit 77) on kernels without sch_netem.
  --impair   boot/hub.py, a userspace switch, instead of the bridge: nodes
             attach with -netdev dgram (UDP on the namespace's loopback), the
             hub owns tap foxhub0 for the host side and impairs frames between
             any two ports. Keys: loss, dup, reorder (percent), delay, jitter
             (ms), seed, udp-port (impair only UDP from/to that port). With
             --require-impairment the run fails unless the hub really dropped,
             duplicated and reordered frames (for each of those asked for).
             --impair "" gives the hub without impairment.
  --local    the hub (impairing if --impair says so) in the caller's own
             network namespace, without a tap: nodes reach only one another,
             through UDP ports on 127.0.0.1. No root, no host side (no
             --host-cmd, --netem, --dhcp). `make run` uses it.

--live prints each console line as it arrives, prefixed "nodeI| ", instead
of every console at the end.

Host commands (--host-cmd, repeatable) run with `sh -c` inside the namespace,
from the repository root, once every node has printed its boot banner (or,
with --host-after I:REGEX, once node I's console matches REGEX; all:REGEX,
once every node's does). Each must
exit 0; one still running --host-grace seconds after the nodes finished is
killed and fails the run. With --until-host the nodes are stopped once every
host command has exited (a node that had not exited by then is not checked for
its exit status). Their environment:
    FOX_NETNS  FOX_NODES  FOX_HOST_IP (10.77.0.1)  FOX_HOST_IF (foxbr0|foxhub0)
    FOX_NODE_IPS ("10.77.0.10 10.77.0.11 ...")  FOX_NODE<I>_IP  FOX_NODE<I>_MAC
    FOX_ROOT (the repository)
Their output appears in the log, each line prefixed "host<K>| ".

Exit status: 0 when every expectation holds, 1 when one fails, 2 for bad
arguments, 77 (CTest's skip) when root (without --local), KVM (asked for) or
netem is missing.
"""
import argparse
import json
import os
import random
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qemu_run  # noqa: E402

HOST_IP = "10.77.0.1"
PREFIX = 24
HUB_BASE_PORT = 40000
IMPAIR_KEYS = {"loss": "--loss", "dup": "--dup", "reorder": "--reorder", "delay": "--delay",
               "jitter": "--jitter", "seed": "--seed", "udp-port": "--impair-udp-port"}


def node_ip(i):
    return "10.77.0.%d" % (10 + i)


def node_mac(i):
    return "52:54:00:77:00:%02x" % i


def sh(*args, check=True):
    return subprocess.run(list(args), check=check, capture_output=True, text=True)


def netem_available():
    """Whether this kernel has the netem qdisc (some sandboxes lack sch_netem)."""
    probe = "fox-probe-%d" % os.getpid()
    sh("ip", "netns", "add", probe)
    try:
        ns = ["ip", "netns", "exec", probe]
        sh(*ns, "ip", "link", "add", "d0", "type", "dummy", check=False)
        return sh(*ns, "tc", "qdisc", "add", "dev", "d0", "root", "netem", "loss", "1%", check=False).returncode == 0
    finally:
        sh("ip", "netns", "del", probe, check=False)


def remove_stale_namespaces():
    """Namespaces fox-<pid> / fox-probe-<pid> whose creator is gone (killed by SIGKILL)."""
    listing = sh("ip", "netns", "list", check=False).stdout
    for line in listing.splitlines():
        m = re.match(r"(fox-(?:probe-|bench-)?(\d+))\b", line)
        if m and not process_alive(int(m.group(2))):
            sh("ip", "netns", "del", m.group(1), check=False)


def process_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(") ", 1)[1][0] != "Z"  # a zombie has finished
    except (OSError, IndexError):
        return False


class Namespace:
    """The namespace with a bridge and one tap per node (netem optional)."""
    host_if = "foxbr0"

    def __init__(self, nodes, netem="", name=None):
        self.name = name or "fox-%d" % os.getpid()
        self.nodes = nodes
        self.netem = netem

    def __enter__(self):
        sh("ip", "netns", "add", self.name)
        try:
            ns = self.exec_prefix()
            sh(*ns, "ip", "link", "set", "lo", "up")
            self.setup(ns)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def setup(self, ns):
        sh(*ns, "ip", "link", "add", self.host_if, "type", "bridge")
        sh(*ns, "ip", "addr", "add", "%s/%d" % (HOST_IP, PREFIX), "dev", self.host_if)
        sh(*ns, "ip", "link", "set", self.host_if, "up")
        for i in range(self.nodes):
            tap = "foxtap%d" % i
            sh(*ns, "ip", "tuntap", "add", "dev", tap, "mode", "tap")
            sh(*ns, "ip", "link", "set", tap, "master", self.host_if)
            sh(*ns, "ip", "link", "set", tap, "up")
            if self.netem:  # impairment on the bridge's way to each node
                sh(*ns, "tc", "qdisc", "add", "dev", tap, "root", "netem", *self.netem.split())

    def netdev(self, i):
        return "tap,id=n0,ifname=foxtap%d,script=no,downscript=no" % i

    def exec_prefix(self):
        return ["ip", "netns", "exec", self.name]

    def report(self):
        return ""

    def __exit__(self, *exc):
        # Deleting the namespace deletes the bridge and taps inside it.
        sh("ip", "netns", "del", self.name, check=False)


class HubNamespace(Namespace):
    """The namespace with boot/hub.py switching (and impairing) between the nodes and tap foxhub0."""
    host_if = "foxhub0"

    def __init__(self, nodes, hub_args, name=None):
        super().__init__(nodes, "", name)
        self.hub_args = hub_args
        self.base_port = HUB_BASE_PORT
        self.tap = True
        self.hub = None
        self.hub_out = []
        self.stats_file = None
        self.stats = None

    def setup(self, ns):
        fd, self.stats_file = tempfile.mkstemp(prefix="fox-hub-", suffix=".json")
        os.close(fd)
        cmd = ns + [sys.executable, "-u", os.path.join(qemu_run.ROOT, "boot", "hub.py"), "--ports", str(self.nodes),
                    "--base-port", str(self.base_port), "--stats-json", self.stats_file] + self.hub_args
        if self.tap:
            cmd += ["--tap", self.host_if, "--tap-addr", "%s/%d" % (HOST_IP, PREFIX)]
        self.hub = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True)
        ready = self.hub.stdout.readline()
        self.hub_out.append(ready.rstrip("\n"))
        if not ready.startswith("hub: ready"):
            rest = self.hub.communicate(timeout=10)[0]
            raise RuntimeError("the hub did not start: %s" % (ready + rest).strip())
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.hub.stdout:
            self.hub_out.append(line.rstrip("\n"))

    def netdev(self, i):
        return ("dgram,id=n0,local.type=inet,local.host=127.0.0.1,local.port=%d,"
                "remote.type=inet,remote.host=127.0.0.1,remote.port=%d" % (self.base_port + 2 * i + 1,
                                                                           self.base_port + 2 * i))

    def stop_hub(self):
        if self.hub is None or self.hub.poll() is not None:
            return
        self.hub.send_signal(signal.SIGTERM)
        try:
            self.hub.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.hub.kill()
            self.hub.wait()
        self.reader.join(timeout=5)
        try:
            with open(self.stats_file) as f:
                self.stats = json.load(f)
        except (OSError, ValueError):
            self.stats = None

    def report(self):
        return "\n".join(self.hub_out)

    def close_hub(self):
        """Stops the hub and removes its counters file."""
        self.stop_hub()
        if self.stats_file:
            try:
                os.unlink(self.stats_file)
            except OSError:
                pass

    def __exit__(self, *exc):
        self.close_hub()
        super().__exit__(*exc)


class LocalHub(HubNamespace):
    """--local: the hub in the caller's own network namespace, without a tap:
    the nodes reach one another (and nothing else) through UDP ports on
    127.0.0.1. Needs no privileges; there is no host side."""
    host_if = None

    def __init__(self, nodes, hub_args):
        super().__init__(nodes, hub_args, name="local")
        self.tap = False
        self.base_port = free_port_range(2 * nodes)

    def __enter__(self):
        # Ports found free may be taken before the hub binds them (another
        # test's sockets): then the hub tries other ports, a few times.
        for attempt in range(3):
            try:
                self.setup([])
                return self
            except RuntimeError as e:
                self.__exit__(None, None, None)
                if "Address already in use" not in str(e) or attempt == 2:
                    raise
                self.hub, self.hub_out = None, []
                self.base_port = free_port_range(2 * self.nodes)
            except BaseException:
                self.__exit__(None, None, None)
                raise

    def exec_prefix(self):
        return []

    def __exit__(self, *exc):
        self.close_hub()  # no namespace to remove


def free_port_range(count):
    """A base port B such that UDP ports B..B+count-1 on 127.0.0.1 are free now.

    The base is drawn from the system's entropy: a seed of pid ^ time in ms
    was the same for two tests that ctest started together (pids n and n + 1,
    1 ms apart), which then raced for the same ports ("the hub did not start:
    Address already in use")."""
    rng = random.SystemRandom()
    for _ in range(50):
        base = rng.randrange(20000, 60000 - count) & ~1
        socks = []
        try:
            for p in range(base, base + count):
                sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                socks.append(sock)
                sock.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for sock in socks:
                sock.close()
    raise RuntimeError("no %d free UDP ports on 127.0.0.1" % count)


def parse_impair(spec):
    """'loss=5 dup=5 ...' -> hub.py arguments; ValueError on a bad key or value."""
    out, asked = [], {}
    for word in spec.replace(",", " ").split():
        key, eq, value = word.partition("=")
        if not eq or key not in IMPAIR_KEYS:
            raise ValueError("bad --impair item %r: expected KEY=VALUE with KEY one of %s" %
                             (word, ", ".join(sorted(IMPAIR_KEYS))))
        try:
            number = float(value)
        except ValueError:
            raise ValueError("bad --impair item %r: %r is not a number" % (word, value))
        if number < 0:
            raise ValueError("bad --impair item %r: negative" % word)
        asked[key] = number
        out += [IMPAIR_KEYS[key], value]
    return out, asked


def peers_arg(nodes):
    """fox.peers naming every node of the plan."""
    return "fox.peers=" + ",".join("%d@%s" % (i, node_ip(i)) for i in range(nodes))


def node_append(i, append, dhcp=False, nodes=0, accel="tcg", cluster_size=1):
    """Boot args for node I: its id and, unless the caller gives them, its address (see the plan)
    and, with `nodes`, fox.peers naming the plan's first `nodes` nodes."""
    words = ["fox.node=%d" % i]
    if nodes and not re.search(r"(^|\s)fox\.peers=", append):
        words.append(peers_arg(nodes))
    if not dhcp and not re.search(r"(^|\s)fox\.ip=", append):
        words.append("fox.ip=%s/%d" % (node_ip(i), PREFIX))
    if not re.search(r"(^|\s)fox\.gw=", append):
        words.append("fox.gw=%s" % HOST_IP)
    for arg in qemu_run.membership_args(accel, cluster_size):  # unless the caller sets them
        if not re.search(r"(^|\s)%s=" % re.escape(arg.split("=")[0]), append):
            words.append(arg)
    return " ".join(words + [append]).strip()


def node_console(workdir, i):
    return os.path.join(workdir, "node%d.log" % i)


class Node:
    """One QEMU node; its console is also logged to a file so others can watch it while it runs."""

    def __init__(self, i, cmd, workdir, timeout):
        """`cmd`: the node's QEMU command, its console standard output logged to node_console()."""
        self.i = i
        self.console = node_console(workdir, i)
        self.pidfile = os.path.join(workdir, "node%d.pid" % i)
        self.cmd = cmd + ["-pidfile", self.pidfile]
        self.timeout = timeout
        self.result = None
        self.stopped = False
        self.thread = threading.Thread(target=self._run)

    def _run(self):
        self.result = qemu_run.run_qemu(self.cmd, self.timeout, echo=False)

    def text(self):
        try:
            with open(self.console, errors="replace") as f:
                return f.read().replace("\r\n", "\n")
        except OSError:
            return ""

    def stop(self):
        """Kills this node's QEMU (by the pid it wrote), if it still runs."""
        try:
            with open(self.pidfile) as f:
                pid = int(f.read().strip())
            os.kill(pid, signal.SIGKILL)
            self.stopped = True
        except (OSError, ValueError):
            pass


class HostCommand:
    def __init__(self, k, command):
        self.k = k
        self.command = command
        self.proc = None
        self.lines = []
        self.reader = None

    def start(self, prefix, env):
        self.proc = subprocess.Popen(["setpriv", "--pdeathsig", "KILL", "--"] + prefix + ["sh", "-c", self.command], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                                     env=env, cwd=qemu_run.ROOT, start_new_session=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        if self.running():
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def host_env(ns, nodes):
    env = dict(os.environ, FOX_NETNS=ns.name, FOX_NODES=str(nodes), FOX_HOST_IP=HOST_IP, FOX_HOST_IF=ns.host_if or "",
               FOX_NODE_IPS=" ".join(node_ip(i) for i in range(nodes)), FOX_ROOT=qemu_run.ROOT)
    for i in range(nodes):
        env["FOX_NODE%d_IP" % i] = node_ip(i)
        env["FOX_NODE%d_MAC" % i] = node_mac(i)
    return env


def parse_node_regex(spec, nodes, what, allow_all=False):
    """I:REGEX -> (I, regex); with allow_all, all:REGEX -> (None, regex): every node."""
    i, colon, regex = spec.partition(":")
    every = allow_all and i == "all"
    if not colon or not (every or (i.isdigit() and int(i) < nodes)):
        raise ValueError("bad %s %r: expected I:REGEX with 0 <= I < %d%s" % (what, spec, nodes,
                                                                           " or all:REGEX" if allow_all else ""))
    try:
        return None if every else int(i), re.compile(regex, re.M)
    except re.error as e:
        raise ValueError("bad %s %r: %s" % (what, spec, e))


def on_terminate(signum, frame):
    raise SystemExit(128 + signum)  # unwinds through the cleanups below


def exit_status(specs, i):
    """Node i's expected exit status from --expect-exit's S and I:S entries (the last that applies)."""
    status = 0
    for spec in specs:
        node, _, value = spec.rpartition(":")
        if node == "" or int(node) == i:
            status = int(value)
    return status


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--image", default=os.path.join(qemu_run.ROOT, "build", "native", "vmtest.elf"))
    ap.add_argument("--append", default="")
    ap.add_argument("--smp", type=int, default=1)
    ap.add_argument("--mem", type=int, default=128)
    ap.add_argument("--accel", default="auto", choices=["auto", "kvm", "tcg"])
    ap.add_argument("--nic", default="modern", choices=sorted(qemu_run.NIC_INTERFACES),
                    help="the nodes' virtio-net interface: modern or legacy, with MSI-X or INTx only")
    ap.add_argument("--local", action="store_true",
                    help="no namespace, no root: the hub on 127.0.0.1 ports, nodes only (no host side)")
    ap.add_argument("--live", action="store_true", help="print the consoles as they come, each line prefixed nodeI|")
    ap.add_argument("--peers", action="store_true", help="give every node fox.peers naming all the nodes")
    ap.add_argument("--netem", default="")
    ap.add_argument("--impair", help="use boot/hub.py with these impairments (see above)")
    ap.add_argument("--require-impairment", action="store_true")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--expect-exit", action="append", default=[],
                    help="S: every node's exit status (default 0); I:S: node I's (repeatable)")
    ap.add_argument("--expect-node", action="append", default=[], help="I:REGEX on node I's console")
    ap.add_argument("--reject-node", action="append", default=[], help="I:REGEX that must not be on node I's console")
    ap.add_argument("--host-cmd", "--host-command", action="append", default=[], dest="host_cmd",
                    help="run inside the namespace (repeatable)")
    ap.add_argument("--host-after", help="I:REGEX: start host commands once node I's console matches (all:REGEX: "
                                         "once every node's does)")
    ap.add_argument("--host-grace", type=float, default=10)
    ap.add_argument("--until-host", action="store_true", help="stop the nodes once the host commands exit")
    ap.add_argument("--dhcp", action="store_true",
                    help="give the nodes no fox.ip: they ask DHCP (a host command must serve it)")
    ap.add_argument("--killed", type=int, action="append", default=[],
                    help="node I is killed on purpose by a host command: its exit status is not checked")
    args = ap.parse_args()
    if not 1 <= args.nodes <= 200:
        ap.error("--nodes must be from 1 to 200")
    if args.netem and args.impair is not None:
        ap.error("--netem and --impair exclude each other (netem is for the bridge, --impair for the hub)")
    if args.require_impairment and args.impair is None:
        ap.error("--require-impairment needs --impair")
    if args.until_host and not args.host_cmd:
        ap.error("--until-host needs --host-cmd")
    try:
        hub_args, asked = parse_impair(args.impair or "")
        expects = [parse_node_regex(s, args.nodes, "--expect-node") for s in args.expect_node]
        rejects = [parse_node_regex(s, args.nodes, "--reject-node") for s in args.reject_node]
        after = (parse_node_regex(args.host_after, args.nodes, "--host-after", allow_all=True)
                 if args.host_after else None)
    except ValueError as e:
        ap.error(str(e))
    if args.host_after and not args.host_cmd:
        ap.error("--host-after needs --host-cmd")
    if args.local and (args.host_cmd or args.netem or args.dhcp):
        ap.error("--local has no host side: no --host-cmd, --netem or --dhcp")
    if not os.path.exists(args.image):
        print("cluster: %s does not exist (run make first)" % args.image, file=sys.stderr)
        return 2
    if os.geteuid() != 0 and not args.local:
        print("cluster: SKIP: needs root to create a network namespace (--local does not)")
        return 77
    if not args.local:
        remove_stale_namespaces()
    if args.netem and not netem_available():
        print("cluster: SKIP: tc netem is not available in this kernel (no sch_netem); --impair works here")
        return 77
    accel, why = qemu_run.choose_accel(args.accel)
    if accel is None:
        print("cluster: SKIP: %s" % why)
        return 77

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_terminate)
    failures = []
    workdir = tempfile.mkdtemp(prefix="fox-cluster-")
    if args.local:
        ns = LocalHub(args.nodes, hub_args)
    elif args.impair is not None:
        ns = HubNamespace(args.nodes, hub_args)
    else:
        ns = Namespace(args.nodes, args.netem)
    nodes, hosts = [], [HostCommand(k, c) for k, c in enumerate(args.host_cmd)]
    try:
        with ns:
            for i in range(args.nodes):
                cmd = qemu_run.qemu_command(args.image, node_append(i, args.append, args.dhcp,
                                                                    args.nodes if args.peers else 0, accel,
                                                                    args.nodes * args.smp),
                                            args.smp, args.mem, accel, None, False,
                                            console="stdio,signal=off,logfile=%s" % node_console(workdir, i))
                cmd += ["-netdev", ns.netdev(i), "-device", "virtio-net-pci,netdev=n0,mac=%s%s"
                        % (node_mac(i), qemu_run.NIC_INTERFACES[args.nic])]
                # setpriv: the QEMUs die with this harness even if it is SIGKILLed.
                nodes.append(Node(i, ["setpriv", "--pdeathsig", "KILL", "--"] + ns.exec_prefix() + cmd, workdir,
                                  args.timeout))
            for n in nodes:
                n.thread.start()
            try:
                supervise(args, ns, nodes, hosts, after, failures)
            finally:
                for h in hosts:
                    h.kill()
                for n in nodes:
                    n.stop()
                for n in nodes:
                    n.thread.join()
            if isinstance(ns, HubNamespace):
                ns.stop_hub()
    finally:
        for h in hosts:
            h.kill()
        for name in os.listdir(workdir):
            os.unlink(os.path.join(workdir, name))
        os.rmdir(workdir)

    for n in nodes:
        r = n.result
        if n.stopped and args.until_host:
            continue  # stopped on purpose once the host commands were done
        if n.i in args.killed:
            continue  # a host command killed it (failure-detection tests)
        if r is None or r["reason"] or r["status"] != exit_status(args.expect_exit, n.i):
            failures.append("node %d: status %s%s" % (n.i, r and r["status"],
                                                       r and r["reason"] and ", " + r["reason"] or ""))
    for i, regex in expects:
        if not regex.search(nodes[i].result["text"] if nodes[i].result else ""):
            failures.append("node %d's console lacks /%s/" % (i, regex.pattern))
    for i, regex in rejects:
        found = regex.search(nodes[i].result["text"] if nodes[i].result else "")
        if found:
            failures.append("node %d's console has /%s/: %s" % (i, regex.pattern, found.group(0)))
    if isinstance(ns, HubNamespace):
        check_impairment(args, ns, asked, failures)
    for n in nodes if not args.live else []:
        print("---- node %d (%s) ----\n%s" % (n.i, node_ip(n.i), n.result["text"] if n.result else n.text()))
    for h in hosts:
        status = h.proc.returncode if h.proc else "never started"
        print("---- host %d: %s (exit %s) ----" % (h.k, h.command, status))
        for line in h.lines:
            print("host%d| %s" % (h.k, line))
    if isinstance(ns, HubNamespace):
        print("---- hub ----\n" + ns.report())
    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    print("cluster: %d nodes ok (accel %s, %s%s)" % (args.nodes, accel,
                                                    "hub %s" % (args.impair or "without impairment")
                                                    if isinstance(ns, HubNamespace) else "bridge",
                                                    " on 127.0.0.1" if args.local else ""))
    return 0


def supervise(args, ns, nodes, hosts, after, failures):
    """Starts the host commands when due, and waits for nodes and host commands to finish."""
    env = host_env(ns, args.nodes)
    started = not hosts
    nodes_done_at = None
    shown = [0] * len(nodes)  # --live: console bytes printed so far
    while True:
        if args.live:
            show_new_lines(nodes, shown)
        alive = [n for n in nodes if n.thread.is_alive()]
        if not started:
            # Liveness first, consoles second: a node seen dead has written all it will.
            watched = [nodes[after[0]]] if after is not None and after[0] is not None else nodes
            dead = [not n.thread.is_alive() for n in watched]
            if after is not None:
                due = all(after[1].search(n.text()) for n in watched)
            else:
                due = all(qemu_run.BANNER.search(n.text()) for n in watched)
            if due:
                for h in hosts:
                    h.start(ns.exec_prefix(), env)
                started = True
            elif any(dead):
                failures.append("host commands never started: %s" % (
                    "%s console never matched /%s/" % ("a node's" if after[0] is None else "node %d's" % after[0],
                                                       after[1].pattern) if after
                    else "not every node printed its boot banner"))
                return
        if started and hosts and args.until_host and not any(h.running() for h in hosts):
            for n in nodes:
                n.stop()
        if not alive:
            if nodes_done_at is None:
                nodes_done_at = time.monotonic()
            if not any(h.running() for h in hosts):
                break
            if time.monotonic() - nodes_done_at > args.host_grace:
                for h in hosts:
                    if h.running():
                        failures.append("host command %d still running %g s after the nodes finished" %
                                        (h.k, args.host_grace))
                        h.kill()
                break
        time.sleep(0.05)
    if args.live:
        show_new_lines(nodes, shown, final=True)
    for h in hosts:
        if h.reader:
            h.reader.join(timeout=5)
        if h.proc is not None and h.proc.returncode not in (0, None) and h.proc.returncode != -signal.SIGKILL:
            failures.append("host command %d exited with %d" % (h.k, h.proc.returncode))


def show_new_lines(nodes, shown, final=False):
    """--live: prints what each console gained since the last call, whole lines only (all at the end)."""
    for n in nodes:
        text = n.text()
        new = text[shown[n.i]:]
        if not final:
            new = new[:new.rfind("\n") + 1]
        if new:
            for line in new.splitlines():
                print("node%d| %s" % (n.i, line))
            sys.stdout.flush()
            shown[n.i] += len(new)


def check_impairment(args, ns, asked, failures):
    if ns.stats is None:
        failures.append("the hub left no counters")
        return
    total = ns.stats["total"]
    if args.require_impairment:
        for key, counter in (("loss", "dropped"), ("dup", "duplicated"), ("reorder", "reordered")):
            if asked.get(key, 0) > 0 and total[counter] == 0:
                failures.append("the hub %s no frame (impairment %s=%g never happened)" % (counter, key, asked[key]))


if __name__ == "__main__":
    sys.exit(main())
