#!/usr/bin/env python3
"""Every libFuzzer target (tests/fuzz/CMakeLists.txt lists them in build/host/tests/fuzz/fuzzers.list)
for a number of executions each (`make fuzz`; CTest runs each for 20 s instead), with ASan and UBSan,
on its seeds and the corpus it grows (build/host/tests/fuzz/NAME.corpus). Prints per target:

  fuzz: NAME: N executions in S s, 0 crashes

then `fuzz: T targets, E executions, C crashing`; exit status 1 if any target crashed (libFuzzer
leaves the input as crash-* in build/host/tests/fuzz/).

  run_all.py [--runs N] [NAME...]
"""
import argparse
import os
import re
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
FUZZ_DIR = os.path.join(ROOT, "build", "host", "tests", "fuzz")
EXECUTED = re.compile(r"stat::number_of_executed_units: (\d+)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10_000_000, help="executions per target")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    listing = os.path.join(FUZZ_DIR, "fuzzers.list")
    if not os.path.exists(listing):
        sys.exit("fuzz: %s is missing: build the host tree first (make host)" % os.path.relpath(listing))
    targets = [line.rstrip("\n").split("|") for line in open(listing) if line.strip()]
    if a.names:
        unknown = set(a.names) - {t[0] for t in targets}
        if unknown:
            sys.exit("fuzz: no such target: %s" % ", ".join(sorted(unknown)))
        targets = [t for t in targets if t[0] in a.names]
    total, crashing = 0, []
    for name, binary, flags, seeds in targets:
        corpus = os.path.join(FUZZ_DIR, name + ".corpus")
        os.makedirs(corpus, exist_ok=True)
        cmd = [binary, "-runs=%d" % a.runs, "-timeout=5", "-rss_limit_mb=2048", "-print_final_stats=1"]
        cmd += flags.split() + [corpus, seeds]
        t0 = time.monotonic()
        r = subprocess.run(cmd, cwd=FUZZ_DIR, capture_output=True, text=True,
                           env=dict(os.environ, ASAN_OPTIONS="detect_leaks=1"))
        seconds = time.monotonic() - t0
        m = EXECUTED.search(r.stderr)
        runs = int(m.group(1)) if m else 0
        total += runs
        crashed = r.returncode != 0
        if crashed:
            crashing.append(name)
            print("\n".join(r.stderr.splitlines()[-30:]))
        print("fuzz: %s: %d executions in %.0f s, %d crashes" % (name, runs, seconds, 1 if crashed else 0), flush=True)
    print("fuzz: %d targets, %d executions, %d crashing%s" % (len(targets), total, len(crashing),
                                                              ": " + ", ".join(crashing) if crashing else ""))
    return 1 if crashing else 0


if __name__ == "__main__":
    sys.exit(main())
