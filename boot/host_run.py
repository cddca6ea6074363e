#!/usr/bin/env python3
"""Runs a hosted fox program and checks what it printed, like qemu_run.py
does for nodes: host_run.py --cores N [--expect-exit S] [--expect RE]... -- PROGRAM ARGS"""
import argparse
import os
import re
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cores", type=int, default=1)
    ap.add_argument("--expect-exit", type=int, default=0)
    ap.add_argument("--expect", action="append", default=[])
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = [c for c in args.command if c != "--"]
    env = dict(os.environ, FOX_CORES=str(args.cores))
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
        rc, out = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out = None, (e.stdout or b"").decode() + (e.stderr or b"").decode()
    failures = []
    if rc != args.expect_exit:
        failures.append("exit status %s, expected %d" % (rc, args.expect_exit))
    failures += ["output lacks /%s/" % r for r in args.expect if not re.search(r, out, re.M)]
    if failures:
        print(out)
        print("FAILED: " + "; ".join(failures))
        return 1
    print("host_run: ok (status %s)" % rc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
