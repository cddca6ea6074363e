#!/usr/bin/env python3
"""make bench B=am_rate: 32-byte active messages per second from node 0 to
node 1 (two fox nodes, 1 vCPU each, on a bridge in a private namespace),
with aggregation (the default: messages share MTU-sized frames) and without
(fox.aggregate=off: one frame per message), in one run. Prints

    am_rate.aggregated_msgs_per_s R      (sender's first message to the receiver's count)
    am_rate.unaggregated_msgs_per_s R
    am_rate.ratio X                      (target >= 10)

Needs root (network namespaces).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import am_cluster  # noqa: E402

PATTERN = (r"am_rate: (\d+) messages of 32 bytes to node 1: received (\d+); ([\d.]+) messages/s at the receiver, "
           r"([\d.]+) messages/s end to end")


def measure(accel, count, aggregate):
    append = "%s fox.aggregate=%s -- 0:rate,1,%d,32 0:quit,1" % (am_cluster.PEERS, aggregate, count)
    out = am_cluster.run_cluster(2, append, accel)
    m = am_cluster.find(PATTERN, out, "rate figures")
    return float(m.group(4)), float(m.group(3))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=200000)
    ap.add_argument("--unaggregated-count", type=int, default=20000)
    a = ap.parse_args()
    accel = am_cluster.qemu_run.bench_accel("am_rate")
    agg, agg_rx = measure(accel, a.count, "on")
    one, one_rx = measure(accel, a.unaggregated_count, "off")
    print("am_rate.aggregated_msgs_per_s %.0f msgs/s (receiver side %.0f)" % (agg, agg_rx))
    print("am_rate.unaggregated_msgs_per_s %.0f msgs/s (receiver side %.0f)" % (one, one_rx))
    print("am_rate.ratio %.1f (aggregated / one message per frame; target >= 10; accel %s)" % (agg / one, accel))
    return 0


if __name__ == "__main__":
    sys.exit(main())
