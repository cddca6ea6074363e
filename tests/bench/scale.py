#!/usr/bin/env python3
"""Scale benchmark (make bench B=scale), issue 14.

From the simulation of the membership protocol (tests/bench/scale_sim.cc,
rack defaults: probe 150 ms, suspicion 1 s) for 64, 256 and 1024 nodes:
detection time of a death by every survivor (median, p99), false positives
per hour under 5% message loss and under pauses, and failure-detection
messages per node per second; beside it, the n^2 heartbeats fox sent
before (every peer every 100 ms) as the baseline ratio.

From rootless QEMU clusters of 8, 16, 32 and 64 nodes (64 MiB, the
frontend's switch, TCG here) running the ring: seconds until every node
joined the pool, ring lap median, false deaths, and failure-detection
messages per node per second (the nodes' fd.* counters over their uptime).

    scale.detect_s_1024_p99 X s          target <= 2
    scale.fd_msgs_per_node_s_1024 X msgs target <= 20
    scale.false_deaths_64 N deaths       target 0

    scale.py [--quick] [--sizes 8,16,32,64]
"""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "boot"))
import qemu_run  # noqa: E402

ROOT = qemu_run.ROOT
SIM = os.path.join(ROOT, "build", "host", "tests", "bench", "scale_sim")
FOX = os.path.join(ROOT, "build", "bin", "fox")


def simulation(quick):
    out = subprocess.run([SIM] + (["--quick"] if quick else []), check=True, capture_output=True, text=True).stdout
    print(out, end="")
    figures = {m.group(1): float(m.group(2)) for m in re.finditer(r"^(scale\.\S+) (\S+)", out, re.M)}
    for n in (64, 256, 1024):
        per_node = figures.get("scale.fd_msgs_per_node_s_%d" % n)
        if per_node:
            heartbeats = 10.0 * (n - 1)  # the design before: every peer every 100 ms
            print("scale.fd_msgs_vs_heartbeats_ratio_%d %.4f x" % (n, per_node / heartbeats))
    sys.stdout.flush()


def fox(*args, timeout=900):
    p = subprocess.run([FOX] + list(args), capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def cluster(n, laps):
    name = "bench-scale-%d-%d" % (n, os.getpid())
    try:
        rc, out = fox("cluster", "up", "--nodes", str(n), "--mem", "64", "--name", name, "--timeout", "600")
        m = re.search(r"(\d+) nodes up in ([\d.]+) s", out)
        if rc != 0 or not m:
            print("bench scale: %d nodes did not come up:\n%s" % (n, out[-2000:]), file=sys.stderr)
            print("scale.join_s_%d failed" % n)
            return
        print("scale.join_s_%d %s s" % (n, m.group(2)))
        rc, out = fox("run", "ring", "--name", name, "--timeout", "600", "--", "laps=%d" % laps)
        deaths = len(re.findall(r"am: node \d+ declared dead", out))
        lap = re.search(r"median lap ([\d.]+) us", out)
        print("scale.ring_lap_ms_%d %s ms" % (n, "%.2f" % (float(lap.group(1)) / 1000) if lap else "failed"))
        print("scale.false_deaths_%d %d deaths" % (n, deaths))
        print("scale.suspicions_%d %d suspicions" % (n, len(re.findall(r"am: node \d+ suspected", out))))
        # fd.* counters and the uptime at which each node printed them.
        sent, seconds = 0, 0.0
        per_place = {}
        for m in re.finditer(r"^place(\d+)\| \[\s*([\d.]+)\] I am stats: fd\.(pings_sent|acks_sent|ping_reqs_sent) (\d+)",
                             out, re.M):
            place, at, value = int(m.group(1)), float(m.group(2)), int(m.group(4))
            sent += value
            per_place[place] = max(per_place.get(place, 0.0), at)
        seconds = sum(per_place.values())
        if seconds > 0:
            print("scale.fd_msgs_per_node_s_qemu_%d %.2f msgs" % (n, sent / seconds))
        if rc != 0:
            print("bench scale: the ring on %d nodes exited %d" % (n, rc), file=sys.stderr)
        sys.stdout.flush()
    finally:
        fox("cluster", "down", "--name", name, timeout=120)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="shorter simulations")
    ap.add_argument("--sizes", default="8,16,32,64", help="QEMU cluster sizes (empty: none)")
    args = ap.parse_args()
    for path in (SIM, FOX):
        if not os.path.exists(path):
            sys.exit("bench scale: %s missing; run make first" % path)
    simulation(args.quick)
    for n in [int(x) for x in args.sizes.split(",") if x]:
        cluster(n, 30)


if __name__ == "__main__":
    main()
