#!/usr/bin/env python3
"""The fault campaign's chart (campaign.py --chart): CAMPAIGN_JSON OUTDIR -> OUTDIR/campaign.png.

Per app and fault, a row: the runs' verdicts as stacked bars (correct, documented error, wrong,
hang) and each run's downtime (seconds from the fault to the app whole again) as a dot.
Run with matplotlib (the benchmarks' virtualenv: tests/bench/apps.py run_chart).
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

VERDICTS = (("correct", "#2a7a2a"), ("documented", "#999999"), ("wrong", "#c01c28"), ("hang", "#000000"))


def main():
    path, outdir = sys.argv[1], sys.argv[2]
    with open(path) as f:
        campaign = json.load(f)
    rows = campaign["rows"]
    if not rows:
        print("faults: no runs: no chart")
        return 0
    labels = ["%s: %s" % (r["app"], r["fault"]) for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 0.45 * len(rows) + 1.8), sharey=True,
                                      gridspec_kw={"width_ratios": [1, 1.4]})
    ys = range(len(rows))
    start = [0] * len(rows)
    for verdict, colour in VERDICTS:
        counts = [r[verdict] for r in rows]
        left.barh(ys, counts, left=start, color=colour, label=verdict)
        start = [a + b for a, b in zip(start, counts)]
    left.set_yticks(list(ys), labels)
    left.invert_yaxis()
    left.set_xlabel("runs")
    fig.legend(loc="lower center", ncol=4, fontsize="small", frameon=False)
    left.set_title("verdicts")
    for y, r in zip(ys, rows):
        d = [e["downtime"] for e in r.get("each", []) if e.get("downtime") is not None]
        right.plot(d, [y] * len(d), "o", color="#1a5fb4", alpha=0.6)
    right.set_xlim(left=0)
    right.set_xlabel("downtime, s (fault to whole again)")
    right.set_title("downtime per run")
    right.grid(axis="x", alpha=0.3)
    fig.suptitle("fault campaign, seed %d: %s" % (campaign["seed"], campaign["summary"].split(": ", 1)[-1]),
                 fontsize="medium")
    fig.tight_layout(rect=(0, 0.6 / (0.45 * len(rows) + 1.8), 1, 1))
    out = os.path.join(outdir, "campaign.png")
    fig.savefig(out, dpi=110)
    print("faults: drew %s" % out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
