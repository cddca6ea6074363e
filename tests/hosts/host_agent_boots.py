#!/usr/bin/env python3
"""Every boot a host's agent is asked for ends in exactly one exit (boot/fox/host_agent.py).

    host_agent_boots.py

The supervisor's side of an agent (hosts.HostAgent) drives a real agent on this host (the
launcher runs it here: no Slurm, no ssh), in a namespace of its own:
  1. a boot whose image is not on the host: an error naming it, and its exit (rc -1) at once;
  2. a malformed boot (cores "many"): an error, and its exit (rc -1); a boot QEMU refuses (memory
     -1 MiB): what QEMU said, and its exit (QEMU's status);
  3. a boot of node 2 that runs (its console grows), then a second boot of node 2 while the first
     runs: the first is killed (its exit reported), the second runs;
  4. kill of the second: its exit; the agent closed: no QEMU, no agent, no namespace left.
A supervisor whose boots fail this way sees its nodes dead, never booting forever.
Root needed (a bridge, taps); skipped (77) without it.
"""
import os
import selectors
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "boot"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "frontend"))
from fox import hosts, nodes  # noqa: E402
from frontend_test import Failure, check, namespaces, verdict  # noqa: E402

CLUSTER = "agentboots%d" % (os.getpid() % 100000)


def local_launcher(host, cmd):
    return cmd


class Watch:
    """What the agent reported: exits by (node, boot), consoles by node, its log lines."""

    def __init__(self):
        self.exits = {}
        self.consoles = {}
        self.lines = []

    def on_exit(self, q):
        self.exits[(q.k, q.boot)] = q.returncode

    def on_console(self, k, data):
        self.consoles[k] = self.consoles.get(k, b"") + data

    def log(self, fmt, *args):
        line = fmt % args
        self.lines.append(line)
        print("  | " + line)


def pump(agent, done, timeout, what):
    """The agent's events dispatched (HostAgent.pump) until done(); a Failure naming `what` if not."""
    agent.pump(done, timeout)
    if not done():
        raise Failure("%s: %s" % (what, "the agent is gone" if agent.gone else "not within %d s" % timeout))


def scenario(directory, started):
    watch = Watch()
    agent = hosts.HostAgent("localhost", local_launcher, CLUSTER, 4242, [], os.path.join(directory, "consoles"),
                            selectors.DefaultSelector(), watch.on_exit, watch.on_console, watch.log)
    started.append(agent)
    ready = agent.wait_ready()
    started.append(ready["netns"])
    check(ready["netns"] in namespaces(), "the agent is ready, its namespace %s made" % ready["netns"])
    key = "%032x" % 7
    image = nodes.node_image()
    append = nodes.boot_args(2, "agent", key, nodes.POOL_JOB, "0@%s" % nodes.FRONTEND_IP)

    missing = os.path.join(directory, "no-such.elf")
    agent.boot(1, 1, missing, append, 1, 256, "tcg", False)
    pump(agent, lambda: (1, 1) in watch.exits, 30, "the exit of a boot without its image")
    check(watch.exits[(1, 1)] == -1 and any(missing in line for line in watch.lines),
          "a boot whose image is not on the host: an error naming it, and its exit (rc -1)")

    agent.boot(1, 2, image, append, "many", 256, "tcg", False)
    pump(agent, lambda: (1, 2) in watch.exits, 30, "the exit of a malformed boot")
    check(watch.exits[(1, 2)] == -1 and any("boot 2 of node 1 failed" in line for line in watch.lines[-3:]),
          "a malformed boot: an error, and its exit (rc -1)")

    agent.boot(1, 3, image, append, 1, -1, "tcg", False)
    pump(agent, lambda: (1, 3) in watch.exits, 60, "the exit of a boot QEMU refuses")
    check(watch.exits[(1, 3)] not in (None, 0, -1) and
          any("QEMU (boot 3) said" in line for line in watch.lines[-3:]),
          "a boot QEMU refuses (memory -1 MiB): what QEMU said, and its exit (rc %s)" % watch.exits[(1, 3)])

    first = agent.boot(2, 1, image, append, 1, 256, "tcg", False)
    pump(agent, lambda: len(watch.consoles.get(2, b"")) > 0, 120, "node 2's console")
    check(first.poll() is None, "node 2 (boot 1) runs, its console forwarded")
    grown = len(watch.consoles[2])
    second = agent.boot(2, 2, image, append, 1, 256, "tcg", False)
    pump(agent, lambda: (2, 1) in watch.exits, 30, "the exit of node 2's superseded boot")
    check(watch.exits[(2, 1)] == -9, "a second boot of node 2 kills the first (its exit reported, rc -9)")
    pump(agent, lambda: len(watch.consoles[2]) > grown, 120, "node 2's second console")
    check(second.poll() is None and (2, 2) not in watch.exits, "node 2's second boot runs")

    second.kill()
    pump(agent, lambda: (2, 2) in watch.exits, 30, "the exit of node 2 killed")
    check(watch.exits[(2, 2)] == -9, "kill of node 2: its exit (rc -9)")
    agent.close()
    check(ready["netns"] not in namespaces(), "the agent closed: its namespace removed")


def leftovers(started):
    """The agent (if it was started) and its namespace, removed; what was found named."""
    left = []
    agents = [a for a in started if isinstance(a, hosts.HostAgent)]
    for agent in agents:
        if agent.proc.poll() is None:
            left.append("the agent (pid %d)" % agent.proc.pid)
            agent.close(timeout=5)
    ps = subprocess.run(["pgrep", "-f", "qemu-system.*%s" % CLUSTER], capture_output=True, text=True)
    for pid in ps.stdout.split():
        left.append("QEMU pid %s" % pid)
        subprocess.run(["kill", "-9", pid], check=False)
    for ns in [s for s in started if isinstance(s, str)]:
        if ns in namespaces():
            left.append("namespace %s" % ns)
            subprocess.run(["ip", "netns", "del", ns], check=False)
    return left


def main():
    if os.geteuid() != 0:
        print("SKIP: needs root (a bridge and taps)")
        return 77
    if not os.path.isfile(nodes.node_image()):
        print("FAILED: no %s (make all builds it)" % nodes.node_image())
        return 1
    directory = tempfile.mkdtemp(prefix="fox-agent-boots-")
    started = []

    def clean():
        left = leftovers(started)
        shutil.rmtree(directory, ignore_errors=True)
        return left
    return verdict("host_agent_boots", lambda: scenario(directory, started), clean, errors=(hosts.HostError, ))


if __name__ == "__main__":
    sys.exit(main())
