#!/usr/bin/env python3
"""Irregular applications against their peers (make bench B=irregular; issue 42).

GUPS (HPCC RandomAccess: apps/gups, a GlobalArray updated by asynchronous
delegates) on hosted places, against its MPI peer (tests/bench/mpi/gups_mpi.cc:
HPCC's bucketed MPI_Alltoall/MPI_Alltoallv exchange, CHUNK updates a round
per rank), on the same cores and table (P processes, place or rank i on CPU
i), sides alternated over ROUNDS rounds (a different side first each round),
median and spread (min..max) of GUP/s:
  irregular.gups_fox_gups            fox, batches of one network message (the default)
  irregular.gups_fox_large_gups      fox, batches of 64 KiB (large messages)
  irregular.gups_fox_one_per_frame_gups  fox, one update per batch and the
                                     transport's aggregation off (fox.aggregate=off):
                                     one delegate per frame
  irregular.gups_mpi_gups            the MPI peer
  irregular.gups_vs_mpi_ratio x      fox (default batches) / MPI (medians)
  irregular.gups_large_vs_mpi_ratio x  fox (64 KiB batches) / MPI
  irregular.gups_aggregation_ratio x fox (default batches) / one delegate per frame
UTS (apps/uts: a geometric tree of UTS's T1 family on lifeline-based global
load balancing, apgas/glb.h), on the same P hosted places, each run also
counting the tree alone at place 0 (rounds as above):
  irregular.uts_fox_mnodes_s         fox's rate over the places, M nodes/s
  irregular.uts_alone_mnodes_s       the same tree counted alone at place 0
  irregular.uts_efficiency x         fox's rate / (P x the alone rate), medians
  irregular.uts_resilience_overhead_ratio x  resilient (epochs of 1 s, each saved) / not,
                                     median times of the search, sides alternated
  irregular.uts_downtime_s           a place killed at the start of epoch 2 (fox run --hosted
                                     --kill-at 1:step:2, P+1 places, as a user runs it: the
                                     frontend tells the places of the death it sees): its
                                     death to the restore's end (detection and restore; the
                                     epoch's work done again comes on top, at most an epoch:
                                     here ~0, it dies as the epoch starts)
BFS (apps/bfs: Graph500's search, direction-optimizing over a 1-D partition,
on a Kronecker graph of scale S, edgefactor 16, R roots, every tree
validated) on P hosted places against its MPI peer (tests/bench/mpi/bfs_mpi.cc:
the same search loop, apps/bfs/search.h, its levels' exchanges by
MPI_Alltoallv and MPI_Allgather), rounds as above; Graph500's figure, the
harmonic mean of the roots' TEPS:
  irregular.bfs_fox_mteps / irregular.bfs_mpi_mteps   median (min..max) MTEPS
  irregular.bfs_vs_mpi_ratio x       fox / MPI (medians)
  and whether both sides found the same trees in every run (each root's
  vertices, edges, steps and depth sum: the same search, other transport)
Targets (issue 42): aggregation >= 25x (Grappa's gain), GUPS and BFS >= 1x MPI on
hosted places, UTS efficiency >= 0.9, resilient overhead <= 1.02x, downtime per
failure <= 1 s. Charts: build/bench/irregular_gups.png and irregular_uts.png
(tests/bench/irregular_charts.py, matplotlib from PyPI in the bench's virtualenv). Every run verifies its table (0 errors) but the one-per-frame
runs (check=off: they take ~70x longer). A side whose run fails is printed as
failed; the other figures still are. OpenMPI comes from Debian (installed on
the first run if missing).

  irregular.py [--rounds N] [--log2 K] [--places P] [--uts-depth D] [--bfs-scale S] [--bfs-roots R]
               [--only gups|uts|bfs]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

import apps

ROOT = apps.ROOT
GUPS = re.compile(r"gups: table .* in ([0-9.]+) s: ([0-9.]+) GUP/s")
MPI_GUPS = re.compile(r"gups_mpi: table .* in ([0-9.]+) s: ([0-9.]+) GUP/s")
VERIFIED = re.compile(r"gups(?:_mpi)?: verification: 0 errors")
CHARTS = {}  # what irregular_charts.py draws: per app, each side's runs

UTS = re.compile(r"uts: .* (\d+) nodes over .* in ([0-9.]+) s: ([0-9.]+) M nodes/s")
UTS_ALONE = re.compile(r"uts: counted alone at place 0: (\d+) nodes in ([0-9.]+) s \(([0-9.]+) M nodes/s\): the same count")
CHUNK = 8192  # updates a round per rank: HPCC's MPI versions bucket 1024..; more amortises the exchange here


def run_fox(args, n, fox_args="", app="gups", prefix=False):
    """An app on n hosted places (FOX_CORES=1, place i on CPU i); place 0's output (prefix: every
    place's, each line "placeI| "), or None if it failed."""
    program = os.path.join(ROOT, "build", "host", "apps", app, app)
    base = apps.free_port_range(n)
    peers = "fox.peers=" + ",".join("%d@127.0.0.1:%d" % (i, base + i) for i in range(n))
    procs = []
    for i in range(n):
        env = dict(os.environ, FOX_CORES="1",
                   FOX_ARGS="fox.node=%d fox.amport=%d %s %s" % (i, base + i, peers, fox_args))
        cpu = i % os.cpu_count()
        procs.append(subprocess.Popen([program] + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True, preexec_fn=lambda cpu=cpu: os.sched_setaffinity(0, {cpu})))
    try:
        out = procs[0].communicate(timeout=600)[0]
        rest = [p.communicate(timeout=60)[0] for p in procs[1:]]
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
            p.wait()
        print("bench irregular: fox %s %s timed out" % (app, " ".join(args)))
        return None
    if procs[0].returncode != 0:
        print("bench irregular: fox %s %s failed:\n%s" % (app, " ".join(args), out[-2000:]))
        return None
    if prefix:  # every place's lines, "placeI| ..."
        return "".join("".join("place%d| %s\n" % (i, line) for line in text.splitlines())
                       for i, text in enumerate([out] + rest))
    return out


def run_mpi(binary, args, n):
    name = os.path.basename(binary)
    try:
        r = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "core", "-np", str(n),
                            binary] + args, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        print("bench irregular: %s timed out" % name)
        return None
    if r.returncode != 0:
        print("bench irregular: %s failed:\n%s%s" % (name, r.stdout[-2000:], r.stderr[-2000:]))
        return None
    return r.stdout


def rate(out, pattern, check):
    """GUP/s from a run's output (None if it failed or, with `check`, did not verify)."""
    m = out and pattern.search(out)
    if not m or (check and not VERIFIED.search(out)):
        if out:
            print("bench irregular: a run printed no verified figure:\n%s" % out[-1500:])
        return None
    return float(m.group(2))


def spread(values):
    return "%.6f GUP/s (%.6f..%.6f, %d runs)" % (statistics.median(values), min(values), max(values), len(values))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--log2", type=int, default=22)
    ap.add_argument("--small-log2", type=int, default=16, help="the one-per-frame runs' table")
    ap.add_argument("--places", type=int, default=2)
    ap.add_argument("--uts-depth", type=int, default=11, help="T1's depth (10: 4.1M nodes; 11: ~4x)")
    ap.add_argument("--bfs-scale", type=int, default=20, help="the Kronecker graph's scale (2^S vertices)")
    ap.add_argument("--bfs-roots", type=int, default=16, help="searches a run (Graph500: 64)")
    ap.add_argument("--only", choices=["gups", "uts", "bfs"], help="one application's figures")
    a = ap.parse_args()
    if a.only in (None, "gups"):
        gups(a)
    if a.only in (None, "uts"):
        CHARTS["uts"] = {"places": a.places}
        uts(a)
        uts_resilience(a)
    if a.only in (None, "bfs"):
        bfs(a)
    apps.draw_charts("irregular", "irregular_charts.py", CHARTS)
    return 0


def gups(a):
    """GUPS: fox's batches against MPI and against one delegate per frame."""
    apps.ensure_mpi()
    binary = apps.build_mpi("gups")
    n, log2 = a.places, str(a.log2)
    sides = {
        "fox": lambda: rate(run_fox(["log2=" + log2], n), GUPS, True),
        "fox_large": lambda: rate(run_fox(["log2=" + log2, "batch=65536"], n), GUPS, True),
        "fox_one_per_frame": lambda: rate(
            run_fox(["log2=%d" % a.small_log2, "batch=0", "check=off"], n, "fox.aggregate=off"), GUPS, False),
        "mpi": lambda: rate(run_mpi(binary, [log2, str(CHUNK)], n), MPI_GUPS, True),
    }
    results = {side: [] for side in sides}
    failed = {side: 0 for side in sides}
    order = list(sides)
    for k in range(a.rounds):
        for side in order[k % len(order):] + order[:k % len(order)]:
            value = sides[side]()
            if value is None:
                failed[side] += 1
            else:
                results[side].append(value)
        print("bench irregular: round %d: %s" % (k + 1, ", ".join(
            "%s %s" % (s, "%.6f" % results[s][-1] if results[s] else "failed") for s in order)), flush=True)
    for side in order:
        if results[side]:
            print("irregular.gups_%s_gups %s%s" % (side, spread(results[side]),
                                                  "; %d runs failed" % failed[side] if failed[side] else ""))
        else:
            print("irregular.gups_%s_gups FAILED (every run)" % side)
    CHARTS["gups"] = dict(results, places=n)
    med = {s: statistics.median(v) for s, v in results.items() if v}
    for name, top, bottom in (("gups_vs_mpi", "fox", "mpi"), ("gups_large_vs_mpi", "fox_large", "mpi"),
                              ("gups_aggregation", "fox", "fox_one_per_frame")):
        if top in med and bottom in med:
            print("irregular.%s_ratio %.3f x" % (name, med[top] / med[bottom]))
        else:
            print("irregular.%s_ratio unavailable (a side failed)" % name)
    print("irregular: table 2^%s words (one per frame: 2^%d) over %d places or ranks, %d rounds" %
          (log2, a.small_log2, n, a.rounds))


UTS_TIME = re.compile(r"uts: .* nodes over .* in ([0-9.]+) s:")
DIED = re.compile(r"place(\d+)\| apgas: place \d+ dies in step \d+ \(fox.kill_at\) at unix ([0-9.]+)")
RESTORED = re.compile(r"glb: restored from epoch \d+ after 1 places lost at unix ([0-9.]+)")


def fox_run_killed(args, n):
    """uts as a user runs it (fox run --hosted: the frontend tells the places of a death it sees)
    with place 1 killed at the start of epoch 2; its output, or None."""
    fox = os.path.join(ROOT, "build", "bin", "fox")
    try:
        r = subprocess.run([fox, "run", "uts", "--hosted", "--places", str(n), "--kill-at", "1:step:2", "--timeout",
                            "600", "--"] + args, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        return None
    out = r.stdout + r.stderr  # its status is the killed place's (9): place 0's lines tell
    if not UTS_TIME.search(out):
        print("bench irregular: fox run uts (killed) failed (exit %d):\n%s" % (r.returncode, out[-2000:]))
        return None
    return out


def uts_resilience(a):
    """UTS resilient against not (alternated), and the downtime of a place killed at the start of
    epoch 2 (its death to the restore's end, on the realtime clock the hosted places share)."""
    base = ["tree=t1", "depth=%d" % a.uts_depth, "check=off"]
    sides = {"plain": base, "resilient": base + ["resilient=on", "epoch_ms=1000"]}
    times = {side: [] for side in sides}
    downtimes = []
    order = list(sides)
    for k in range(a.rounds):
        for side in order[k % len(order):] + order[:k % len(order)]:
            out = run_fox(sides[side], a.places, app="uts")
            m = out and UTS_TIME.search(out)
            if m:
                times[side].append(float(m.group(1)))
            else:
                print("bench irregular: uts %s round %d failed" % (side, k + 1))
        out = fox_run_killed(base + ["resilient=on", "epoch_ms=1000", "trace=on"], a.places + 1)
        died, restored = out and DIED.search(out), out and RESTORED.search(out)
        if died and restored:
            downtimes.append(float(restored.group(1)) - float(died.group(2)))
        else:
            print("bench irregular: uts kill round %d: no death and restore seen" % (k + 1))
        print("bench irregular: uts round %d: %s; downtime %s" % (k + 1, ", ".join(
            "%s %.3f s" % (s, times[s][-1]) if times[s] else "%s failed" % s for s in order),
            "%.3f s" % downtimes[-1] if downtimes else "failed"), flush=True)
    CHARTS["uts"].update(times)
    med = {s: statistics.median(v) for s, v in times.items() if v}
    for side in order:
        if side in med:
            print("irregular.uts_%s_s %.3f (%.3f..%.3f, %d runs)" % (side, med[side], min(times[side]),
                                                                  max(times[side]), len(times[side])))
    if "plain" in med and "resilient" in med:
        print("irregular.uts_resilience_overhead_ratio %.3f x" % (med["resilient"] / med["plain"]))
    if downtimes:
        print("irregular.uts_downtime_s %.3f (%.3f..%.3f, %d runs; %d places, place 1 killed)" % (
            statistics.median(downtimes), min(downtimes), max(downtimes), len(downtimes), a.places + 1))


def uts(a):
    """UTS's efficiency: fox's rate over the places against place 0's alone, in the same runs."""
    rates, alone = [], []
    args = ["tree=t1", "depth=%d" % a.uts_depth, "check=on"]
    for k in range(a.rounds):
        out = run_fox(args, a.places, app="uts")
        m, m_alone = out and UTS.search(out), out and UTS_ALONE.search(out)
        if not (m and m_alone):
            print("bench irregular: uts round %d failed%s" % (k + 1, ":\n" + out[-1500:] if out else ""))
            continue
        rates.append(float(m.group(3)))
        alone.append(float(m_alone.group(3)))
        print("bench irregular: uts round %d: %s nodes, %.3f M nodes/s over %d places, %.3f alone" %
              (k + 1, m.group(1), rates[-1], a.places, alone[-1]), flush=True)
    if not rates:
        print("irregular.uts_efficiency unavailable (every run failed)")
        return
    CHARTS["uts"].update(rates=rates, alone=alone)
    print("irregular.uts_fox_mnodes_s %.3f (%.3f..%.3f, %d runs)" % (statistics.median(rates), min(rates), max(rates),
                                                                    len(rates)))
    print("irregular.uts_alone_mnodes_s %.3f (%.3f..%.3f)" % (statistics.median(alone), min(alone), max(alone)))
    print("irregular.uts_efficiency %.3f x" % (statistics.median(rates) / (a.places * statistics.median(alone))))


BFS = re.compile(r"bfs(?:_mpi)?: \d+ roots: harmonic mean ([0-9.]+) MTEPS .*: every tree valid")
BFS_ROOT = re.compile(r"bfs(?:_mpi)?: root (\d+): (\d+) vertices and (\d+) edges reached in (\d+) steps "
                      r"\((\d+) bottom-up\), depth sum (\d+)")


def bfs_figures(out):
    """(harmonic mean MTEPS, every root's tree shape) of a run, or None if it failed or a tree was invalid."""
    m = out and BFS.search(out)
    if not m:
        if out:
            print("bench irregular: a bfs run printed no valid figure:\n%s" % out[-1500:])
        return None
    return float(m.group(1)), tuple(BFS_ROOT.findall(out))


def bfs(a):
    """BFS: fox's Team exchanges against MPI's, the same search and graph."""
    apps.ensure_mpi()
    binary = apps.build_mpi("bfs")
    n, scale, roots = a.places, a.bfs_scale, a.bfs_roots
    sides = {
        "fox": lambda: bfs_figures(run_fox(["scale=%d" % scale, "edgefactor=16", "roots=%d" % roots, "seed=1",
                                            "check=on"], n, app="bfs")),
        "mpi": lambda: bfs_figures(run_mpi(binary, [str(scale), "16", str(roots), "1", "1"], n)),
    }
    results = {side: [] for side in sides}
    shapes = set()
    order = list(sides)
    for k in range(a.rounds):
        for side in order[k % len(order):] + order[:k % len(order)]:
            got = sides[side]()
            if got:
                results[side].append(got[0])
                shapes.add(got[1])
        print("bench irregular: bfs round %d: %s" % (k + 1, ", ".join(
            "%s %s" % (s, "%.3f MTEPS" % results[s][-1] if results[s] else "failed") for s in order)), flush=True)
    CHARTS["bfs"] = dict(results, places=n, scale=scale)
    for side in order:
        v = results[side]
        print("irregular.bfs_%s_mteps %s" % (side, "%.3f (%.3f..%.3f, %d runs)" % (
            statistics.median(v), min(v), max(v), len(v)) if v else "FAILED (every run)"))
    if results["fox"] and results["mpi"]:
        print("irregular.bfs_vs_mpi_ratio %.3f x" % (statistics.median(results["fox"]) /
                                                    statistics.median(results["mpi"])))
    else:
        print("irregular.bfs_vs_mpi_ratio unavailable (a side failed)")
    print("irregular: bfs: scale %d, edgefactor 16, %d roots, %d places or ranks, %d rounds; %s" % (
        scale, roots, n, a.rounds, "every run found the same trees (vertices, edges, steps, depth sums)"
        if len(shapes) == 1 else "THE RUNS FOUND DIFFERENT TREES (%d shapes)" % len(shapes)))


if __name__ == "__main__":
    sys.exit(main())
