#!/usr/bin/env python3
"""Writes pagerank's generated graph (apps/pagerank/graph.h: Config::Make, the
same arithmetic) as an edge list, "SOURCE TARGET" per line, so that
`pagerank input=FILE` can be checked against the generated run's answer.

  edges.py OUT VERTICES [MU] [SIGMA] [SEED] [--shuffle-targets]
"""
import argparse

from points import M64, splitmix


def exp(x):
    ln2 = 0.69314718055994530942
    if x > 700:
        x = 700
    if x < -700:
        return 0.0
    k = int(x / ln2 + (-0.5 if x < 0 else 0.5))
    r = x - float(k) * ln2
    term = 1.0
    total = 1.0
    for i in range(1, 20):
        term *= r / i
        total += term
    for _ in range(k):
        total *= 2
    for _ in range(-k):
        total /= 2
    return total


def edges(vertices, mu, sigma, seed, v):
    state = ((seed * 0x9E3779B97F4A7C15) & M64) ^ (((v + 1) * 0xD1B54A32D192ED03) & M64)
    z = -6.0
    for _ in range(12):
        state, u = splitmix(state)
        z += float(u >> 11) * (1.0 / 9007199254740992.0)
    d = exp(mu + sigma * z)
    degree = vertices - 1 if d >= float(vertices - 1) else int(d)
    out = []
    for _ in range(degree):
        state, t = splitmix(state)
        out.append(t % vertices)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("vertices", type=int)
    ap.add_argument("mu", type=float, nargs="?", default=1.0)
    ap.add_argument("sigma", type=float, nargs="?", default=1.0)
    ap.add_argument("seed", type=int, nargs="?", default=1)
    a = ap.parse_args()
    last = 0
    with open(a.out, "w") as f:
        f.write("# pagerank's generated graph: %d vertices\n# FromNodeId\tToNodeId\n" % a.vertices)
        for v in range(a.vertices):
            for t in edges(a.vertices, a.mu, a.sigma, a.seed, v):
                f.write("%d\t%d\n" % (v, t))
                last = max(last, v, t)
    if last != a.vertices - 1:  # the largest id sets the vertex count
        raise SystemExit("edges.py: no edge names vertex %d; pick another size" % (a.vertices - 1))


if __name__ == "__main__":
    main()
