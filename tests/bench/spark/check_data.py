"""Replays fox's steps in numpy on the Spark peers' input: the check that it is fox's input.

  python check_data.py kmeans POINTS DIM K ITERATIONS SEED
  python check_data.py linreg SAMPLES FEATURES ITERATIONS SEED
  python check_data.py pagerank VERTICES ITERATIONS SEED

Draws the input with appdata.py (what the Spark peers load) and runs the
app's exact arithmetic on it (apps/kmeans/lloyd.h's Assign and Update,
apps/linreg/gd.h's Accumulate and Update, apps/pagerank/graph.h's Contribute
and Update: integer partials, so the order of the sums does not matter),
then prints the answer as fox prints it (`kmeans: cost ... after N steps`,
...). tests/bench/apps.py compares it with fox's: equal only if every input
value is fox's bit for bit.
"""
import sys

import numpy as np

import appdata


def fixed(v, scale):
    """gd.h's Fixed: round half away from zero, saturated at +-2^31 units."""
    u = v * scale
    whole = np.floor(np.abs(u))
    rounded = np.copysign(whole + (np.abs(u) - whole >= 0.5), u)
    return np.clip(rounded, -2147483648.0, 2147483648.0).astype(np.int64)


def kmeans(points, dim, k, iterations, seed):
    x = appdata.kmeans_points(seed, k, dim, 0, points)
    centroids = appdata.kmeans_initial_centroids(seed, k, dim, points)
    cost = 0
    for _ in range(iterations):
        d2 = np.empty((points, k))
        for j in range(k):
            acc = np.zeros(points)
            for d in range(dim):
                diff = x[:, d] - centroids[j, d]
                acc = acc + diff * diff
            d2[:, j] = acc
        nearest = np.argmin(d2, axis=1)  # the lowest index on a tie, as Assign
        cost = int((d2[np.arange(points), nearest] * 65536.0 + 0.5).astype(np.uint64).sum(dtype=np.uint64))
        for j in range(k):
            mine = nearest == j
            if mine.any():
                centroids[j] = x[mine].sum(axis=0) / float(mine.sum())  # exact sums: multiples of 2^-20
    return "kmeans: cost %.6f after %d steps" % (cost / 65536.0, iterations)


def linreg(samples, features, iterations, seed):
    x, y = appdata.linreg_rows(seed, features, 0, samples)
    w = np.zeros(features)
    error = 0
    for _ in range(iterations):
        r = -y
        for j in range(features):
            r = r + x[:, j] * w[j]
        gradient = np.array([int(fixed(r * x[:, j], 16777216.0).sum()) for j in range(features)], dtype=np.float64)
        error = int(fixed(r * r, 65536.0).sum())
        w = w - 1.0 * (gradient / 16777216.0 / float(samples))  # rate 1, lambda 0
    return "linreg: mean squared error %.9f after %d steps" % (error / 65536.0 / float(samples), iterations)


def pagerank(vertices, iterations, seed):
    mass = 1 << 50
    degree, targets = appdata.pagerank_edges(seed, vertices, 0, vertices)
    source = np.repeat(np.arange(vertices), degree)
    ranks = np.full(vertices, mass // vertices, dtype=np.int64)
    ranks[:mass % vertices] += 1
    for _ in range(iterations):
        share = ranks // np.maximum(degree, 1)
        arriving = np.zeros(vertices, dtype=np.int64)
        np.add.at(arriving, targets, share[source])
        ranks = arriving // 100 * 85 + arriving % 100 * 85 // 100
        rest = mass - int(ranks.sum())
        ranks += rest // vertices
        ranks[:rest % vertices] += 1
    checksum = 0
    for r in ranks.tolist():
        checksum = (checksum * 0x100000001B3 + r) & 0xFFFFFFFFFFFFFFFF
    return "pagerank: rank checksum %016x after %d steps" % (checksum, iterations)


def main():
    app, args = sys.argv[1], [int(a) for a in sys.argv[2:]]
    print({"kmeans": kmeans, "linreg": linreg, "pagerank": pagerank}[app](*args))


if __name__ == "__main__":
    main()
