"""The hosts of a cluster: the supervisor's own and the others, reached through their agents.

Inside a Slurm allocation (SLURM_JOB_ID and SLURM_JOB_NODELIST set), `fox cluster up` spreads
its nodes over the allocation's hosts: node K lives on host (K - 1) mod H, in the order
`scontrol show hostnames` lists them, where the supervisor's host (if it is one of them) comes
first. Without Slurm, `fox cluster up --hosts H1,H2,...` does the same over ssh. On every host
but the supervisor's, one agent (host_agent.py), started as a job step (`srun --overlap` on
that host) or through ssh (FOX_SSH: the command, default `ssh -o BatchMode=yes`), runs the
nodes there; its standard input and output are the supervisor's channel to it. The file
system holding fox (its build, the node image) is the same path on every host, as on an HPC
cluster's shared file system.
"""
import base64
import json
import os
import select
import selectors
import shlex
import socket
import subprocess
import sys
import time
from typing import IO

BOOT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
READY_TIMEOUT_S = 60


class HostError(Exception):
    pass


def slurm_hosts(environ=None):
    """The allocation's hosts (scontrol show hostnames), or None outside one."""
    env = os.environ if environ is None else environ
    if not env.get("SLURM_JOB_ID") or not env.get("SLURM_JOB_NODELIST"):
        return None
    try:
        r = subprocess.run(["scontrol", "show", "hostnames", env["SLURM_JOB_NODELIST"]], capture_output=True,
                           text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        raise HostError("scontrol show hostnames: %s" % e)
    if r.returncode != 0:
        raise HostError("scontrol show hostnames %s: %s" % (env["SLURM_JOB_NODELIST"], r.stderr.strip()))
    return [h for h in r.stdout.split() if h]


def order(hosts, here=None):
    """`hosts` with this host first when it is one of them."""
    here = here or socket.gethostname()
    return ([here] if here in hosts else []) + [h for h in hosts if h != here]


def address(host):
    try:
        return socket.gethostbyname(host)
    except OSError as e:
        raise HostError("host %s: no address (%s)" % (host, e))


class RemoteQemu:
    """A node's QEMU on another host, as the supervisor sees a local one (poll, kill, wait)."""

    def __init__(self, agent, k, boot):
        self.agent = agent
        self.k = k
        self.boot = boot
        self.returncode = None
        self.pid = None
        self.killed = False

    def poll(self):
        return self.returncode

    def kill(self):
        if self.returncode is None and not self.killed:
            self.killed = True
            self.agent.send(op="kill", node=self.k, boot=self.boot)

    def send_signal(self, sig):
        self.kill()

    def wait(self, timeout=10):
        """Its return code once its agent told it (None if the agent is gone or it takes longer)."""
        self.agent.pump(lambda: self.returncode is not None, timeout)
        return self.returncode


class HostAgent:
    """The supervisor's side of one host's agent: started with `launch` (a command that runs
    python3 on that host), its events dispatched from the supervisor's selector loop."""

    def __init__(self, host, launch, cluster, vni, peers, directory, sel, on_exit, on_console, log):
        self.host = host
        self.sel = sel
        self.on_exit = on_exit
        self.on_console = on_console
        self.log = log
        self.qemus = {}  # (node, boot) -> RemoteQemu
        self.ready = None
        self.gone = False
        self.buffer = b""
        env = dict(os.environ, PYTHONPATH=BOOT_DIR + os.pathsep + os.environ.get("PYTHONPATH", ""))
        cmd = launch(host, [sys.executable, "-u", "-S", "-m", "fox.host_agent", "--cluster", cluster,
                            "--vni", str(vni), "--peers", ",".join(peers), "--dir", directory])
        self.stderr = open(os.path.join(os.path.dirname(directory), "host-%s.log" % host), "ab")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, env=env,
                                     start_new_session=True)
        assert self.proc.stdin is not None and self.proc.stdout is not None  # both PIPE
        self.stdin: IO[bytes] = self.proc.stdin
        self.stdout: IO[bytes] = self.proc.stdout
        os.set_blocking(self.stdout.fileno(), False)
        sel.register(self.stdout, selectors.EVENT_READ, self.on_readable)

    def send(self, **request):
        if self.gone:
            return
        try:
            self.stdin.write(json.dumps(request).encode() + b"\n")
            self.stdin.flush()
        except OSError:
            self.lost("its input closed")

    def boot(self, k, boot, image, append, cores, mem, accel, pxe):
        q = RemoteQemu(self, k, boot)
        self.qemus[(k, boot)] = q
        self.send(op="boot", node=k, boot=boot, image=image, append=append, cores=cores, mem=mem, accel=accel,
                  pxe=pxe)
        if self.gone:
            q.returncode = -9
        return q

    def on_readable(self):
        try:
            chunk = os.read(self.stdout.fileno(), 1 << 20)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self.lost("its agent's output ended (exit %s)" % self.proc.poll())
            return
        self.buffer += chunk
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            try:
                self.event(json.loads(line))
            except (ValueError, KeyError, TypeError) as e:
                self.log("host %s: bad line from its agent (%s): %r", self.host, e, line[:200])

    def event(self, e):
        kind = e["event"]
        if kind == "ready":
            self.ready = e
        elif kind == "console":
            self.on_console(int(e["node"]), base64.b64decode(e["data"]))
        elif kind == "exit":
            q = self.qemus.pop((int(e["node"]), int(e["boot"])), None)
            if q is not None:
                q.returncode = int(e["rc"])
                self.on_exit(q)
        elif kind == "error":
            self.log("host %s: %s", self.host, e["error"])
        else:
            raise ValueError("unknown event %r" % kind)

    def pump(self, done, timeout):
        """Reads events (dispatching them) until done() or `timeout` s pass or the agent is gone."""
        deadline = time.monotonic() + timeout
        while not done() and not self.gone:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            r, _, _ = select.select([self.stdout], [], [], min(left, 0.2))
            if r:
                self.on_readable()

    def wait_ready(self, timeout=READY_TIMEOUT_S):
        self.pump(lambda: self.ready is not None, timeout)
        if self.ready is None:
            raise HostError("host %s: its agent did not start within %d s (%s)" % (
                self.host, timeout, "gone" if self.gone else "no answer"))
        return self.ready

    def lost(self, why):
        """The agent is gone (its host, the allocation, or the launcher ended): every node it ran exits
        without a status, which makes them dead."""
        if self.gone:
            return
        self.gone = True
        self.log("host %s: lost: %s", self.host, why)
        try:
            self.sel.unregister(self.stdout)
        except (KeyError, ValueError):
            pass
        for q in list(self.qemus.values()):
            q.returncode = -9
            self.on_exit(q)
        self.qemus.clear()

    def close(self, timeout=15):
        """Ends the agent: its input closed, it stops its QEMUs and removes its namespace."""
        if not self.gone:
            try:
                self.sel.unregister(self.stdout)
            except (KeyError, ValueError):
                pass
        self.gone = True
        try:
            self.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.stderr.close()


def slurm_launcher(host, cmd):
    """`cmd` as a job step on `host` in the current allocation, sharing its resources with the others
    (srun carries the environment)."""
    return ["srun", "--overlap", "--nodes=1", "--ntasks=1", "--nodelist=%s" % host, "--job-name=fox-host-agent",
            "--quiet", "--unbuffered", "--kill-on-bad-exit=0"] + cmd


def ssh_launcher(host, cmd):
    """`cmd` on `host` through ssh, which carries no environment: PYTHONPATH on its command line."""
    ssh = shlex.split(os.environ.get("FOX_SSH", "ssh -o BatchMode=yes"))
    remote = ["env", "PYTHONPATH=" + BOOT_DIR] + cmd
    return ssh + [host, "--", " ".join(shlex.quote(word) for word in remote)]


LAUNCHERS = {"slurm": slurm_launcher, "ssh": ssh_launcher}
