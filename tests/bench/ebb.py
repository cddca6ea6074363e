#!/usr/bin/env python3
"""Ebb benchmark (make bench B=ebb): an EbbRef call on the hit path vs a
plain virtual call and a direct call, and the miss cost (hosted build; the
native figures come with a native version of the program)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "build", "host", "tests", "bench", "ebb_bench")

if not os.path.exists(BENCH):
    sys.exit("bench ebb: %s missing; run make first" % BENCH)
out = subprocess.run([BENCH], check=True, capture_output=True, text=True).stdout
for line in out.splitlines():
    if line.startswith("ebb."):
        name, rest = line.split(" ", 1)
        print("%s_hosted %s" % (name, rest))
