#!/usr/bin/env python3
"""make bench B=tcp: lwIP TCP throughput from a fox node to the Linux
frontend side (a Python sink at 10.77.0.1 in the cluster's namespace; bridge
and tap, 1 vCPU). Prints

    tcp.node_to_linux_mib_per_s R    (at the receiver, first byte to EOF)
    tcp.sender_mib_per_s R           (at the node: until the last byte was in lwIP's buffer)

Needs root (network namespaces).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import am_cluster  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mib", type=int, default=32)
    ap.add_argument("--port", type=int, default=5001)
    a = ap.parse_args()
    accel = am_cluster.qemu_run.bench_accel("tcp")
    out = am_cluster.run_cluster(1, "%s -- 0:sleep,1500 0:tcp,%d,%d" % (am_cluster.PEERS, a.port, a.mib), accel,
                                 extra=["--host-cmd", "python3 tests/bench/tcp_sink.py %d" % a.port])
    rx = am_cluster.find(r"tcp_sink: received (\d+) bytes in ([\d.]+) s: ([\d.]+) MiB/s", out, "sink figures")
    tx = am_cluster.find(r"tcp: sent (\d+) MiB in (\d+) ms: ([\d.]+) MiB/s", out, "sender figures")
    if int(rx.group(1)) != a.mib << 20:
        raise RuntimeError("the sink received %s bytes, not %d" % (rx.group(1), a.mib << 20))
    print("tcp.node_to_linux_mib_per_s %s MiB/s (%d MiB; accel %s)" % (rx.group(3), a.mib, accel))
    print("tcp.sender_mib_per_s %s MiB/s" % tx.group(3))
    return 0


if __name__ == "__main__":
    sys.exit(main())
