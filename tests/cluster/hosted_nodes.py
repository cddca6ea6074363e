#!/usr/bin/env python3
"""Runs N hosted fox nodes (Linux processes of one program) on 127.0.0.1,
each on a UDP port of its own, with the same arguments, and checks them.

    hosted_nodes.py --nodes N [--timeout S] [--expect I:REGEX]... [--reject I:REGEX]...
                    [--node-args I:ARGS]... [--killed I]... [--expect-exit I:STATUS]...
                    [--kill-when I:J:REGEX]... PROGRAM [ARG...]

Node I gets FOX_ARGS="fox.node=I fox.amport=P_I fox.peers=0@127.0.0.1:P_0,..."
(free ports picked at random), then --node-args' ARGS for node I. Needs no privileges and touches only
loopback. Every node must exit 0 within --timeout seconds (else it is killed)
and every --expect must match node I's output. --kill-when kills node I
(SIGKILL, from outside, as `fox kill` does) once a line of node J's output
matches REGEX; node I then counts as --killed. Prints each node's output,
prefixed "nodeI| ". Exit status 0 when all holds, 1 otherwise, 2 for bad
arguments.
"""
import argparse
import os
import re
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "boot"))
from cluster import free_port_range  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--cores", type=int, default=1, help="cores (threads) per node: FOX_CORES")
    ap.add_argument("--expect", action="append", default=[], help="I:REGEX on node I's output")
    ap.add_argument("--node-args", action="append", default=[], help="I:ARGS added to node I's FOX_ARGS")
    ap.add_argument("--args", action="append", default=[], help="ARGS added to every node's FOX_ARGS")
    ap.add_argument("--killed", type=int, action="append", default=[],
                    help="node I is expected to die: its exit status is not checked")
    ap.add_argument("--reject", action="append", default=[], help="I:REGEX that must not be in node I's output")
    ap.add_argument("--expect-exit", action="append", default=[], help="I:STATUS node I must exit with (not 0)")
    ap.add_argument("--kill-when", action="append", default=[],
                    help="I:J:REGEX kill node I (SIGKILL) once a line of node J's output matches REGEX")
    ap.add_argument("program", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    if not a.program or not 1 <= a.nodes <= 64:
        ap.error("need a program and 1..64 nodes")
    def per_node(values, flag, valid=lambda v: True):
        """`I:VALUE` arguments as (I, VALUE) pairs; a bad one is a usage error."""
        pairs = []
        for e in values:
            i, colon, value = e.partition(":")
            if not colon or not i.isdigit() or int(i) >= a.nodes or not valid(value):
                ap.error("bad %s %r" % (flag, e))
            pairs.append((int(i), value))
        return pairs

    expects = [(i, re.compile(r, re.M)) for i, r in per_node(a.expect, "--expect")]
    rejects = [(i, re.compile(r, re.M)) for i, r in per_node(a.reject, "--reject")]
    statuses = {i: int(v) for i, v in per_node(a.expect_exit, "--expect-exit", lambda v: v.lstrip("-").isdigit())}
    kills = []  # (victim, watched node, regex)
    for i, rest in per_node(a.kill_when, "--kill-when", lambda v: re.match(r"\d+:.", v) is not None):
        j, _, regex = rest.partition(":")
        if int(j) >= a.nodes:
            ap.error("bad --kill-when %r" % ("%d:%s" % (i, rest)))
        kills.append((i, int(j), re.compile(regex, re.M)))
        a.killed.append(i)
    extra = ["".join(" " + words for words in a.args)] * a.nodes
    for i, words in per_node(a.node_args, "--node-args"):
        extra[i] += " " + words
    base = free_port_range(a.nodes)
    ports = list(range(base, base + a.nodes))
    peers = "fox.peers=" + ",".join("%d@127.0.0.1:%d" % (i, p) for i, p in enumerate(ports))
    procs = []
    outs = [""] * a.nodes
    lock = threading.Lock()
    fired = set()

    def read(i):
        """Node i's output, line by line, firing the --kill-when triggers that watch it."""
        for line in procs[i].stdout:
            with lock:
                outs[i] += line
                for k, (victim, watched, regex) in enumerate(kills):
                    if watched == i and k not in fired and regex.search(line):
                        fired.add(k)
                        procs[victim].kill()

    readers = []
    timed_out = []
    try:
        for i in range(a.nodes):
            # FOX_PARENT_PID, as fox run sets it: the nodes die with this process, and
            # print line by line (--kill-when watches their output as it comes).
            env = dict(os.environ, FOX_PARENT_PID=str(os.getpid()), FOX_CORES=str(a.cores), FOX_ARGS="fox.node=%d fox.amport=%d %s%s" % (i, ports[i], peers, extra[i]))
            procs.append(subprocess.Popen(a.program, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True, errors="replace"))
        for i in range(a.nodes):
            readers.append(threading.Thread(target=read, args=(i,), daemon=True))
            readers[-1].start()
        deadline = time.monotonic() + a.timeout
        for i, p in enumerate(procs):
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                timed_out.append(i)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for r in readers:
            r.join(timeout=10)
    failures = ["node %d's output never matched /%s/: node %d was not killed" % (watched, regex.pattern, victim)
                for k, (victim, watched, regex) in enumerate(kills) if k not in fired]
    for i, p in enumerate(procs):
        for line in outs[i].splitlines():
            print("node%d| %s" % (i, line))
        if i in timed_out:
            failures.append("node %d still ran after %g s (killed)" % (i, a.timeout))
        elif i in statuses and p.returncode != statuses[i]:
            failures.append("node %d exited with %d, expected %d" % (i, p.returncode, statuses[i]))
        elif p.returncode != 0 and i not in a.killed and i not in statuses:
            failures.append("node %d exited with %d" % (i, p.returncode))
    for i, regex in expects:
        if not regex.search(outs[i]):
            failures.append("node %d's output lacks /%s/" % (i, regex.pattern))
    for i, regex in rejects:
        if regex.search(outs[i]):
            failures.append("node %d's output has /%s/" % (i, regex.pattern))
    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    print("hosted_nodes: %d nodes ok" % a.nodes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
