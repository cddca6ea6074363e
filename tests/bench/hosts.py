#!/usr/bin/env python3
"""make bench B=hosts: two fox nodes on two hosts against two on one host (issue 44).

Three hosts under Slurm on this machine (tests/hosts/slurm_hosts.py: network namespaces with
their own hostnames, joined by a bridge; munge, slurmctld, slurmd). The frontend runs on host
0; an allocation of host 1 alone puts both nodes of a 2-node cluster there ("same"), one of
hosts 1 and 2 puts one on each ("cross": their frames cross the hosts' VXLAN). Per layout and
round (alternated, --rounds, default 5):
  - the job's launch: `fox run ring --places 3 -- laps=1` on the cluster's idle pool, wall time;
  - the AM round trip between the two nodes: `ring pings=N` (node 1 sends N messages one at a
    time to node 2, which echoes each): the median of that run.
Prints each side's median over the rounds with p10..p90 and the ratios of the medians:

    hosts.same_host_rtt_us M us (p10 A .. p90 B)
    hosts.cross_host_rtt_us M us (...)
    hosts.cross_host_rtt_ratio R x        (target <= 1.5)
    hosts.same_host_launch_ms / hosts.cross_host_launch_ms / hosts.cross_host_launch_ratio

Needs root (namespaces, bridges, VXLAN); without it, says so and measures nothing.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "hosts"))
from slurm_hosts import HostsError, SlurmHosts  # noqa: E402

FOX = os.path.join(ROOT, "build", "bin", "fox")


def spread(values):
    v = sorted(values)
    at = lambda q: v[min(len(v) - 1, int(round(q * (len(v) - 1))))]  # noqa: E731
    return statistics.median(v), at(0.1), at(0.9)


def run(hosts, env, *args, timeout=300):
    started = time.monotonic()
    r = hosts.run(0, [FOX] + list(args), timeout=timeout, env=env)
    took = time.monotonic() - started
    if r.returncode != 0:
        raise HostsError("fox %s exited %d:\n%s" % (" ".join(args), r.returncode, (r.stdout + r.stderr)[-2000:]))
    return r.stdout + r.stderr, took


def measure(hosts, layout, pings, state):
    """(launch seconds, round-trip median us) of one round on `layout`'s hosts."""
    where = [hosts.names[1]] if layout == "same" else hosts.names[1:3]
    r = hosts.run(0, ["salloc", "-N", str(len(where)), "-w", ",".join(where), "--no-shell", "--job-name",
                      "fox-bench"], timeout=60)
    m = re.search(r"Granted job allocation (\d+)", r.stdout + r.stderr)
    if not m:
        raise HostsError("salloc: %s" % (r.stdout + r.stderr))
    job = m.group(1)
    env = dict(os.environ, FOX_STATE_DIR=state, SLURM_JOB_ID=job, SLURM_JOB_NODELIST=",".join(where))
    try:
        run(hosts, env, "cluster", "up", "--nodes", "2", "--name", "bench")
        _, launch = run(hosts, env, "run", "ring", "--name", "bench", "--places", "3", "--", "laps=1")
        out, _ = run(hosts, env, "run", "ring", "--name", "bench", "--places", "3", "--", "laps=10",
                     "pings=%d" % pings)
        m = re.search(r"round trips between node 1 and node 2: median ([\d.]+) us", out)
        if not m:
            raise HostsError("no round trips in the ring's output:\n%s" % out[-2000:])
        return launch, float(m.group(1))
    finally:
        hosts.run(0, [FOX, "cluster", "down", "--name", "bench"], env=env)
        hosts.run(0, ["scancel", job])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--pings", type=int, default=1000)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("hosts: not measured: needs root (network namespaces, bridges, VXLAN)")
        return 0
    state = tempfile.mkdtemp(prefix="fox-bench-hosts-")
    figures = {"same": ([], []), "cross": ([], [])}
    try:
        with SlurmHosts(3) as hosts:
            for r in range(args.rounds):
                for layout in (("same", "cross") if r % 2 == 0 else ("cross", "same")):
                    launch, rtt = measure(hosts, layout, args.pings, state)
                    figures[layout][0].append(launch * 1000)
                    figures[layout][1].append(rtt)
                    print("# round %d, %s host%s: launch %.0f ms, round trip median %.1f us" % (
                        r + 1, layout, "" if layout == "same" else "s", launch * 1000, rtt))
    except (HostsError, subprocess.TimeoutExpired) as e:
        print("hosts: failed: %s" % e)
        return 1
    finally:
        shutil.rmtree(state, ignore_errors=True)
    for what, i, unit in (("rtt", 1, "us"), ("launch", 0, "ms")):
        medians = {}
        for layout in ("same", "cross"):
            med, p10, p90 = spread(figures[layout][i])
            medians[layout] = med
            print("hosts.%s_host_%s_%s %.1f %s (p10 %.1f .. p90 %.1f, %d rounds)" % (
                layout, what, unit, med, unit, p10, p90, len(figures[layout][i])))
        print("hosts.cross_host_%s_ratio %.2f x%s" % (what, medians["cross"] / medians["same"],
                                                     "  (target <= 1.5)" if what == "rtt" else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
