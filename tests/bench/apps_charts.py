#!/usr/bin/env python3
"""The charts of `make bench B=apps` (tests/bench/apps.py writes FIGURES, a JSON file, and runs this
with the bench's virtualenv, which has matplotlib):

  build/bench/apps_steps.png        time per step of each app: fox, fox resilient, MPI, Spark
  build/bench/apps_timeline_APP.png  a run with one place killed (fox run --hosted, a spare):
                                     steps per second over time, the death, the catch and the
                                     recovery's phases (rebuild, remake, restore, a new spare)

  apps_charts.py FIGURES OUTDIR
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SIDES = [("fox", "fox"), ("resilient", "fox, checkpoints"), ("mpi", "MPI"), ("spark", "Spark")]


def steps_chart(figures, out):
    apps = list(figures)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    width = 0.2
    for k, (side, label) in enumerate(SIDES):
        xs, ys = [], []
        for i, app in enumerate(apps):
            ms = figures[app].get(side)
            if ms:
                xs.append(i + (k - 1.5) * width)
                ys.append(ms)
        if xs:
            bars = ax.bar(xs, ys, width, label=label)
            ax.bar_label(bars, fmt="%.3g", fontsize=7)
    ax.set_yscale("log")
    ax.set_xticks(range(len(apps)), apps)
    ax.set_ylabel("ms per step (median of the rounds; log scale)")
    ax.set_title("Iterative apps: fox hosted places against MPI and Spark, same cores and data")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def timeline_chart(app, t, out):
    """t: steps (unix times of each step's end), died, caught, rebuild, remake, restore, top-up (s)."""
    ends = t["steps"]
    origin = ends[0] if ends else t["died"]
    xs, rates = [], []
    for a, b in zip(ends, ends[1:]):
        if b > a:
            xs.append(b - origin)
            rates.append(1.0 / (b - a))
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot(xs, rates, ".-", label="steps per second")
    died, caught = t["died"] - origin, t["caught"] - origin
    ax.axvline(died, color="red", label="place killed")
    spans = [("detection", died, caught, "orange")]
    at = caught
    for phase, color in (("rebuild", "purple"), ("remake", "green"), ("restore", "blue"), ("top-up", "gray")):
        spans.append((phase if phase != "top-up" else "a new spare", at, at + t.get(phase, 0), color))
        at += t.get(phase, 0)
    for phase, a, b, color in spans:
        ax.axvspan(a, max(b, a + 1e-4), color=color, alpha=0.3, label="%s %.3f s" % (phase, b - a))
    ax.set_xlabel("seconds since the first step's end")
    ax.set_ylabel("steps per second")
    ax.set_title("%s: one place killed, a spare takes its place (fox run --hosted)" % app)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main():
    with open(sys.argv[1]) as f:
        figures = json.load(f)
    outdir = sys.argv[2]
    steps_chart({app: f["ms"] for app, f in figures.items()}, os.path.join(outdir, "apps_steps.png"))
    written = ["apps_steps.png"]
    for app, f in figures.items():
        if f.get("timeline"):
            timeline_chart(app, f["timeline"], os.path.join(outdir, "apps_timeline_%s.png" % app))
            written.append("apps_timeline_%s.png" % app)
    print("bench apps: charts in %s: %s" % (os.path.relpath(outdir), ", ".join(written)))


if __name__ == "__main__":
    main()
