#!/usr/bin/env python3
"""Writes kmeans' generated points (apps/kmeans/lloyd.h: GeneratePoint, the
same integer arithmetic) as a file of points, one per line, so that
`kmeans input=FILE` can be checked against the generated run's answer.

  points.py OUT POINTS [DIM] [K] [SEED] [--sep ,]  (coordinates exact: multiples of 2^-20)
"""
import argparse

M64 = (1 << 64) - 1
QUANTUM = 1.0 / (1 << 20)


def splitmix(state):
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def draw(state, lo, hi):
    state, v = splitmix(state)
    return state, lo + (v % int((hi - lo) / QUANTUM)) * QUANTUM


def point(seed, k, dim, i):
    state = ((seed * 0x9E3779B97F4A7C15) & M64) ^ (((i + 1) * 0xD1B54A32D192ED03) & M64)
    state, v = splitmix(state)
    centre = v % k
    cstate = (seed * 0x2545F4914F6CDD1D + centre) & M64
    out = []
    for _ in range(dim):
        cstate, mid = draw(cstate, 10, 90)
        state, a = draw(state, -8, 8)
        state, b = draw(state, -8, 8)
        x = mid + a + b
        out.append(0.0 if x < 0 else (100 - QUANTUM if x >= 100 else x))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("points", type=int)
    ap.add_argument("dim", type=int, nargs="?", default=4)
    ap.add_argument("k", type=int, nargs="?", default=8)
    ap.add_argument("seed", type=int, nargs="?", default=1)
    ap.add_argument("--sep", default=",")
    a = ap.parse_args()
    with open(a.out, "w") as f:
        f.write("# kmeans points: %d of %d dimensions\n" % (a.points, a.dim))
        for i in range(a.points):
            f.write(a.sep.join(repr(x) for x in point(a.seed, a.k, a.dim, i)) + "\n")


if __name__ == "__main__":
    main()
