#!/usr/bin/env python3
"""Checkpoint and restore bandwidth (make bench B=store; issue 39): the
BuddyStore the iterative executors checkpoint into against the Dht-backed
ResilientStore, in the same run, on 3 hosted places (Linux processes of
tests/bench/store_bench.cc on 127.0.0.1, one core each, place i on CPU
i mod the CPUs). For values of 1, 8 and 32 MiB, the median of 5 rounds
(min..max) of:
  store.STORE_set_SMiB_MBps          place 1 writes its value (acknowledged by
                                     both copies)
  store.STORE_local_read_SMiB_MBps   place 1 reads its own value back
  store.STORE_remote_read_SMiB_MBps  place 0 reads place 1's value
  store.STORE_dead_read_32MiB_MBps   place 1 reads the value of place 2, which
                                     died after writing it (a restore of a dead
                                     place's part); once a run, the median of 3
                                     runs (the later two of 32 MiB alone)
and the ratios BuddyStore / ResilientStore at each size (dead_read: 32 MiB):
  store.buddy_vs_dht_set_SMiB_ratio, store.buddy_vs_dht_local_read_SMiB_ratio,
  store.buddy_vs_dht_dead_read_32MiB_ratio
The iterative apps' checkpoints are 0.4-1.3 MB a place (1 MiB's row). Values
over 32 MiB are mapped afresh by glibc at every allocation (its largest
threshold), which the BuddyStore's whole-value copies pay and the Dht's
1 MiB chunks do not.
"""
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "boot"))
from cluster import free_port_range  # noqa: E402

PROGRAM = os.path.join(ROOT, "build", "host", "tests", "bench", "store_bench")
LINE = re.compile(r"store_bench: (\w+) (\w+) (\d+) MiB: ([0-9.]+) MB/s \(([0-9.]+)\.\.([0-9.]+)\)")
PLACES = 3
SIZES = ["1", "8", "32"]
DEAD_RUNS = 3  # a dead place's value: once a run (the run's place 2 dies), the median of these


def run(sizes):
    base = free_port_range(PLACES)
    peers = "fox.peers=" + ",".join("%d@127.0.0.1:%d" % (i, base + i) for i in range(PLACES))
    procs = []
    for i in range(PLACES):
        env = dict(os.environ, FOX_CORES="1", FOX_ARGS="fox.node=%d fox.amport=%d %s" % (i, base + i, peers))
        cpu = i % os.cpu_count()
        procs.append(subprocess.Popen([PROGRAM] + sizes, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True, preexec_fn=lambda cpu=cpu: os.sched_setaffinity(0, {cpu})))
    out = procs[0].communicate(timeout=900)[0]
    for p in procs[1:]:
        p.communicate(timeout=60)  # place 2 dies on purpose: its status is not checked
    if procs[0].returncode != 0:
        sys.exit("bench store: the run failed:\n%s" % out)
    return out


def main():
    if not os.path.exists(PROGRAM):
        sys.exit("bench store: %s is missing (make all)" % PROGRAM)
    figures, dead = {}, {}
    for i in range(DEAD_RUNS):  # the first run measures every size; each run ends with a death
        for m in LINE.finditer(run(SIZES if i == 0 else SIZES[-1:])):
            store, op, mib, median, low, high = m.groups()
            if op == "dead_read":
                dead.setdefault((store, mib), []).append(float(median))
            elif i == 0:
                figures[(store, op, mib)] = float(median)
                print("store.%s_%s_%sMiB_MBps %s MB/s (%s..%s)" % (store, op, mib, median, low, high))
    for (store, mib), runs in sorted(dead.items()):
        figures[(store, "dead_read", mib)] = statistics.median(runs)
        print("store.%s_dead_read_%sMiB_MBps %.1f MB/s (%.1f..%.1f, %d runs)" % (
            store, mib, statistics.median(runs), min(runs), max(runs), len(runs)))
    for mib in SIZES:
        for op in ("set", "local_read", "dead_read"):
            buddy, dht = figures.get(("buddy", op, mib)), figures.get(("dht", op, mib))
            if buddy and dht:
                print("store.buddy_vs_dht_%s_%sMiB_ratio %.3f x" % (op, mib, buddy / dht))


if __name__ == "__main__":
    main()
