#!/usr/bin/env python3
"""make bench B=am_rtt: 64-byte active-message round trip between two fox
nodes, against a UDP round trip between two Linux guests with the same QEMU
options (1 vCPU, -m 128, virtio-net-pci on a bridge in a private namespace),
measured one pair after the other, alternating for --rounds rounds (3) since
the host drifts. Prints

    am_rtt.fox_us MEDIAN us          (node 1 -> node 0 -> node 1, handler at interrupt level)
    am_rtt.linux_udp_rtt_us MEDIAN us
    am_rtt.ratio R                   (fox / Linux; target <= 0.5)

Needs root (network namespaces).
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import am_cluster  # noqa: E402
import linux_udp_rtt  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3,
                    help="alternate the fox pair and the Linux pair this many times (the host drifts)")
    a = ap.parse_args()
    accel = am_cluster.qemu_run.bench_accel("am_rtt")
    fox, linux = [], []
    for r in range(a.rounds):
        out = am_cluster.run_cluster(2, "%s -- 1:rtt,0,%d 1:quit,0" % (am_cluster.PEERS, a.count), accel)
        m = am_cluster.find(r"am_rtt: \d+ round trips of 64 bytes with node 0: median ([\d.]+) us, mean ([\d.]+) us, "
                            r"min ([\d.]+) us", out, "fox round-trip figures")
        fox.append(tuple(float(x) for x in m.groups()))
        lx = linux_udp_rtt.measure_linux_udp_rtt(count=a.count, size=64, accel=accel)
        linux.append((lx["median_us"], lx["mean_us"], lx["min_us"]))
        print("# round %d: fox median %.1f us (min %.1f), Linux guests median %.1f us (min %.1f): ratio %.2f"
              % (r + 1, fox[-1][0], fox[-1][2], linux[-1][0], linux[-1][2], fox[-1][0] / linux[-1][0]))
        sys.stdout.flush()
    fox_median = statistics.median(f[0] for f in fox)
    linux_median = statistics.median(x[0] for x in linux)
    print("am_rtt.fox_us %.1f us (median of %d rounds' medians)" % (fox_median, a.rounds))
    print("am_rtt.fox_mean_us %.1f us" % statistics.mean(f[1] for f in fox))
    print("am_rtt.fox_min_us %.1f us" % min(f[2] for f in fox))
    print("am_rtt.linux_udp_rtt_us %.1f us (median of %d rounds' medians)" % (linux_median, a.rounds))
    print("am_rtt.linux_udp_rtt_mean_us %.1f us" % statistics.mean(x[1] for x in linux))
    print("am_rtt.linux_udp_rtt_min_us %.1f us" % min(x[2] for x in linux))
    print("am_rtt.ratio %.2f (fox / Linux guests, median; target <= 0.5; accel %s)"
          % (fox_median / linux_median, accel))
    return 0


if __name__ == "__main__":
    sys.exit(main())
