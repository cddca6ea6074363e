#!/usr/bin/env python3
"""Ebb benchmark (make bench B=ebb): an EbbRef call on the hit path vs a
plain virtual call and a direct call, and the miss cost, on both platforms:
the hosted fox runtime (2 cores) and a native node (2 cores, KVM when it
works, else TCG). Same program: tests/bench/ebb_bench.cc."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "boot"))
import qemu_run  # noqa: E402

ROOT = qemu_run.ROOT
HOSTED = os.path.join(ROOT, "build", "host", "tests", "bench", "ebb_bench_runtime")
IMAGE = os.path.join(ROOT, "build", "native", "bench_ebb.elf")
LINE = re.compile(r"^(ebb\.\S+) (\S+) (\S+)$", re.M)


def main():
    for path in (HOSTED, IMAGE):
        if not os.path.exists(path):
            sys.exit("bench ebb: %s missing; run make first" % path)
    out = subprocess.run([HOSTED], env=dict(os.environ, FOX_CORES="2"), check=True, capture_output=True,
                         text=True).stdout
    for m in LINE.finditer(out):
        print("%s_hosted %s %s" % m.groups())
    accel = qemu_run.bench_accel("ebb", "; native figures under TCG")
    r = qemu_run.run_qemu(qemu_run.qemu_command(IMAGE, "", 2, 256, accel, None, False), 600, echo=False)
    if r["status"] != 0:
        sys.exit("bench ebb: native run failed: %s" % (r["reason"] or r["text"][-800:]))
    for m in LINE.finditer(r["text"]):
        print("%s_native_%s %s %s" % (m.group(1), accel, m.group(2), m.group(3)))


if __name__ == "__main__":
    main()
