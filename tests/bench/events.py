#!/usr/bin/env python3
"""Event-loop benchmark (make bench B=events): cross-core spawn latency and
events per second, from tests/bench/native/events.cc on a 2-core node."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "boot"))
import qemu_run  # noqa: E402

IMAGE = os.path.join(qemu_run.ROOT, "build", "native", "bench_events.elf")


def main():
    if not os.path.exists(IMAGE):
        sys.exit("bench events: %s missing; run make first" % IMAGE)
    accel = qemu_run.bench_accel("events")
    cmd = qemu_run.qemu_command(IMAGE, "-- 50000 2000000", 2, 512, accel, None, False)
    r = qemu_run.run_qemu(cmd, 300, echo=False)
    if r["status"] != 0:
        sys.exit("bench events: run failed: %s" % (r["reason"] or r["text"][-800:]))
    for m in re.finditer(r"^(events\.\S+) (\S+) (\S+)$", r["text"], re.M):
        print("%s_%s %s %s" % (m.group(1), accel, m.group(2), m.group(3)))


if __name__ == "__main__":
    main()
