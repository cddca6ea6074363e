#!/usr/bin/env python3
"""The charts of `make bench B=irregular` (tests/bench/irregular.py writes FIGURES, a JSON file, and
runs this with the bench virtualenv's matplotlib):

  build/bench/irregular_gups.png  GUP/s of every side (median, p10..p90 whiskers from the rounds)
  build/bench/irregular_uts.png   UTS: M nodes/s over the places against P x place 0 alone, and the
                                  search's time without and with resilience (epochs saved)
  build/bench/irregular_bfs.png   BFS: MTEPS of fox and its MPI peer

  irregular_charts.py FIGURES OUTDIR
"""
import json
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

GUPS_SIDES = [("fox", "fox (1 message)"), ("fox_large", "fox (64 KiB)"),
              ("fox_one_per_frame", "fox (1 per frame)"), ("mpi", "MPI")]


def bars(ax, labels, runs):
    """Bars at the medians with whiskers to the smallest and largest run."""
    med = [statistics.median(r) for r in runs]
    low = [m - min(r) for m, r in zip(med, runs)]
    high = [max(r) - m for m, r in zip(med, runs)]
    b = ax.bar(range(len(labels)), med, yerr=[low, high], capsize=4)
    ax.bar_label(b, fmt="%.3g", fontsize=8)
    ax.set_xticks(range(len(labels)), labels)


def gups_chart(g, out):
    sides = [(k, label) for k, label in GUPS_SIDES if g.get(k)]
    fig, ax = plt.subplots(figsize=(7, 4))
    bars(ax, [label for _, label in sides], [g[k] for k, _ in sides])
    ax.set_yscale("log")
    ax.set_ylabel("GUP/s (log scale)")
    ax.set_title("GUPS, %s places or ranks, same cores and table" % g.get("places", "?"))
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def uts_chart(u, out):
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 4))
    p = u.get("places", 1)
    rate = [("fox over %d places" % p, u.get("rates")), ("%d x alone" % p, [p * a for a in u.get("alone", [])])]
    rate = [(label, r) for label, r in rate if r]
    if rate:
        bars(left, [label for label, _ in rate], [r for _, r in rate])
    left.set_ylabel("M nodes/s")
    left.set_title("UTS: efficiency")
    times = [(label, u.get(k)) for k, label in (("plain", "not resilient"), ("resilient", "resilient"))]
    times = [(label, t) for label, t in times if t]
    if times:
        bars(right, [label for label, _ in times], [t for _, t in times])
    right.set_ylabel("s (the search)")
    right.set_title("UTS: resilience (epochs saved)")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def bfs_chart(b, out):
    sides = [(k, label) for k, label in (("fox", "fox (Team)"), ("mpi", "MPI")) if b.get(k)]
    fig, ax = plt.subplots(figsize=(5, 4))
    bars(ax, [label for _, label in sides], [b[k] for k, _ in sides])
    ax.set_ylabel("MTEPS (harmonic mean over the roots)")
    ax.set_title("Graph500 BFS, scale %s, %s places or ranks" % (b.get("scale", "?"), b.get("places", "?")))
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main():
    figures, outdir = sys.argv[1], sys.argv[2]
    with open(figures) as f:
        data = json.load(f)
    drawn = []
    if data.get("gups"):
        path = os.path.join(outdir, "irregular_gups.png")
        gups_chart(data["gups"], path)
        drawn.append(path)
    if data.get("uts"):
        path = os.path.join(outdir, "irregular_uts.png")
        uts_chart(data["uts"], path)
        drawn.append(path)
    if data.get("bfs"):
        path = os.path.join(outdir, "irregular_bfs.png")
        bfs_chart(data["bfs"], path)
        drawn.append(path)
    print("bench irregular: charts %s" % ", ".join(os.path.relpath(p) for p in drawn) if drawn else
          "bench irregular: no figures to draw")


if __name__ == "__main__":
    main()
