#!/usr/bin/env python3
"""After a failed `make test`: a few lines per failed test, printed last.

CI keeps only the end of what `make test` printed, and ctest's own summary names
the failed tests without saying why. This reads ctest's logs in the build
directory given (Testing/Temporary/LastTestsFailed.log and LastTest.log) and
prints, for each failed test, the lines of its output that say why (FAILED,
Failure, error, Assertion, Timeout...) or else its last lines, at most LINES.

  tests/ctest_digest.py BUILD_DIR [--lines N]
"""
import argparse
import os
import re
import sys

WHY = re.compile(r"FAILED|Failure|[Ee]rror|Assert|[Tt]imeout|declared dead|panic|Traceback|expected", re.ASCII)


def outputs(log_text):
    """Test name -> its output, from LastTest.log."""
    found = {}
    for block in re.split(r"\n-{58}\n\n", log_text):
        name = re.search(r'^"([^"]+)" start time', block, re.M)
        out = re.search(r"Output:\n-{58}\n(.*?)(?:<end of output>|\Z)", block, re.S)
        if name and out:
            found[name.group(1)] = out.group(1)
    return found


def digest(output, limit):
    lines = [l.rstrip() for l in output.splitlines() if l.strip()]
    why = [l for l in lines if WHY.search(l)]
    chosen = why[-limit:] if why else lines[-limit:]
    return [l if len(l) <= 300 else l[:297] + "..." for l in chosen]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build_dir")
    ap.add_argument("--lines", type=int, default=6)
    args = ap.parse_args()
    tmp = os.path.join(args.build_dir, "Testing", "Temporary")
    try:
        with open(os.path.join(tmp, "LastTestsFailed.log")) as f:
            failed = [l.strip().split(":", 1)[1] for l in f if ":" in l]
    except OSError as err:
        print("ctest_digest: no list of failed tests (%s)" % err)
        return 0
    try:
        with open(os.path.join(tmp, "LastTest.log"), errors="replace") as f:
            outs = outputs(f.read())
    except OSError as err:
        print("ctest_digest: no test log (%s)" % err)
        outs = {}
    print("== why the %d failed test(s) failed (tests/ctest_digest.py):" % len(failed))
    for name in failed:
        print("-- %s" % name)
        for line in digest(outs.get(name, "(no output recorded)"), args.lines):
            print("   " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
