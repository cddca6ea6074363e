#!/usr/bin/env python3
"""Iterative apps against their peers (make bench B=apps; issue 39).

For each app (kmeans, linreg, pagerank) on the same data and the same cores (P
processes on this machine's cores), alternating the sides over ROUNDS
rounds, prints the median and spread (min..max) of the timed steps (the
input generated before them and reported apart):
  apps.APP_fox_steps_s          fox, hosted places (fox.spares none), a checkpoint
                                only before the first step (every=1000000)
  apps.APP_fox_resilient_steps_s  the same with a checkpoint every 10 steps (its
                                executor's whole time: steps and checkpoints)
  apps.APP_mpi_steps_s          the MPI peer (tests/bench/mpi/APP_mpi.cc, mpicxx -O3
                                -march=native, mpirun -np P): MPI_Allreduce per step
  apps.APP_vs_mpi_ratio x       fox's throughput / MPI's (median step times)
  apps.APP_resilience_overhead_ratio x  resilient / not (median times)
and checks that every side printed the same answer. Place i runs on CPU i
(its process's affinity; mpirun binds rank i to core i likewise). OpenMPI comes from
Debian (installed on the first run if missing).
"""
import os
import re
import shutil
import statistics
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "boot"))
from cluster import free_port_range  # noqa: E402

ROUNDS = 5
PLACES = 2
APPS = {
    # app: (fox arguments, MPI arguments, fox's answer regex, MPI's answer regex)
    "kmeans": (["points=2000000", "dim=4", "k=8", "iterations=20", "seed=1"], ["2000000", "4", "8", "20", "1"],
               r"kmeans: (cost [0-9.]+ after \d+ steps)", r"kmeans_mpi: (cost [0-9.]+ after \d+ steps)"),
    "linreg": (["samples=1000000", "features=16", "iterations=20", "seed=1"], ["1000000", "16", "20", "1"],
               r"linreg: (mean squared error [0-9.]+ after \d+ steps)",
               r"linreg_mpi: (mean squared error [0-9.]+ after \d+ steps)"),
    "pagerank": (["vertices=200000", "iterations=20", "seed=1"], ["200000", "20", "1"],
                 r"pagerank: (rank checksum \w+ after \d+ steps)", r"pagerank: (rank checksum \w+ after \d+ steps)"),
}
STATS = re.compile(r": ([0-9.]+) s; (\d+) steps \(([0-9.]+) s\), (\d+) checkpoints \(([0-9.]+) s")


def ensure_mpi():
    if shutil.which("mpicxx") and shutil.which("mpirun"):
        return
    print("bench apps: installing OpenMPI (Debian: libopenmpi-dev openmpi-bin)", flush=True)
    subprocess.run(["apt-get", "install", "-y", "-q", "libopenmpi-dev", "openmpi-bin"], check=True,
                   stdout=subprocess.DEVNULL)


def build_mpi(app):
    out = os.path.join(ROOT, "build", "bench", "%s_mpi" % app)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    incs = ["-I" + os.path.join(ROOT, d) for d in ("apps", "apgas/include", "ebb/include", "net/include",
                                                   "kernel/include")]
    subprocess.run(["mpicxx", "-std=c++20", "-O3", "-march=native", "-ffp-contract=off"] + incs +
                   [os.path.join(ROOT, "tests", "bench", "mpi", "%s_mpi.cc" % app), "-o", out], check=True)
    return out


def run_fox(app, args, n):
    program = os.path.join(ROOT, "build", "host", "apps", app, app)
    base = free_port_range(n)
    peers = "fox.peers=" + ",".join("%d@127.0.0.1:%d" % (i, base + i) for i in range(n))
    procs = []
    for i in range(n):
        env = dict(os.environ, FOX_CORES="1", FOX_ARGS="fox.node=%d fox.amport=%d %s" % (i, base + i, peers))
        cpu = i % os.cpu_count()  # place i on CPU i, as mpirun binds rank i (a place pins to its affinity's CPUs)
        procs.append(subprocess.Popen([program] + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True, preexec_fn=lambda cpu=cpu: os.sched_setaffinity(0, {cpu})))
    out = procs[0].communicate(timeout=900)[0]
    for p in procs[1:]:
        p.communicate(timeout=60)
    if procs[0].returncode != 0:
        sys.exit("bench apps: fox %s failed:\n%s" % (app, out))
    return out


def run_mpi(binary, args, n):
    r = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(n), binary] + args,
                       capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        sys.exit("bench apps: %s failed:\n%s%s" % (binary, r.stdout, r.stderr))
    return r.stdout


def spread(values):
    return "%.4f s (%.4f..%.4f)" % (statistics.median(values), min(values), max(values))


def bench(app):
    fox_args, mpi_args, fox_answer, mpi_answer = APPS[app]
    binary = build_mpi(app)
    plain, resilient, mpi, answers = [], [], [], set()
    for r in range(ROUNDS):
        sides = ["fox", "resilient", "mpi"]
        for side in sides[r % 3:] + sides[:r % 3]:  # a different side first each round
            if side == "mpi":
                out = run_mpi(binary, mpi_args, PLACES)
                m = re.search(r"load ([0-9.]+) s, steps ([0-9.]+) s", out)
                mpi.append(float(m.group(2)))
                answers.add(re.search(mpi_answer, out).group(1))
            else:
                every = "every=10" if side == "resilient" else "every=1000000"
                out = run_fox(app, fox_args + [every, "check=0"], PLACES)
                m = STATS.search(out)
                steps_s, ckpt_s = float(m.group(3)), float(m.group(5))
                (resilient if side == "resilient" else plain).append(steps_s + ckpt_s if side == "resilient"
                                                                     else steps_s)
                answers.add(re.search(fox_answer, out).group(1))
    if len(answers) != 1:
        sys.exit("bench apps: %s: the sides' answers differ: %s" % (app, sorted(answers)))
    print("apps.%s_fox_steps_s %s" % (app, spread(plain)))
    print("apps.%s_fox_resilient_steps_s %s" % (app, spread(resilient)))
    print("apps.%s_mpi_steps_s %s" % (app, spread(mpi)))
    print("apps.%s_vs_mpi_ratio %.3f x" % (app, statistics.median(mpi) / statistics.median(plain)))
    print("apps.%s_resilience_overhead_ratio %.3f x" % (app, statistics.median(resilient) / statistics.median(plain)))
    print("apps.%s_answer %s (fox and MPI alike)" % (app, answers.pop()))


def main():
    ensure_mpi()
    print("bench apps: %d places / ranks, %d rounds, sides alternated" % (PLACES, ROUNDS), flush=True)
    for app in APPS:
        bench(app)


if __name__ == "__main__":
    main()
