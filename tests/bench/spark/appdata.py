"""The iterative apps' inputs, drawn as fox draws them, in numpy (Spark peers of tests/bench/apps.py).

Vectorised ports of apps/common/random.h (SplitMix64, RowSeed, Draw, Unit),
apps/kmeans/lloyd.h (GeneratePoint, InitialCentroids), apps/linreg/gd.h
(Config::Row, Truth) and apps/pagerank/graph.h (Exp, Config::Make): each row is
drawn from its own SplitMix64 state, so rows [first, end) come out alike in
any partition. uint64 arrays wrap modulo 2^64 as C++'s uint64_t does, and the
doubles go through the same IEEE operations in the same order (fox's host
build has no FMA contraction), so the values are fox's bits.
"""
import numpy as np

GAMMA = np.uint64(0x9E3779B97F4A7C15)
QUANTUM = 1.0 / (1 << 20)
U = np.uint64


def splitmix64(state):
    """Advances `state` (a uint64 array, in place) and returns the next values."""
    state += GAMMA
    return mix(state.copy())


def mix(z):
    """SplitMix64's output function of the advanced state z (consumed)."""
    z ^= z >> U(30)
    z *= U(0xBF58476D1CE4E5B9)
    z ^= z >> U(27)
    z *= U(0x94D049BB133111EB)
    z ^= z >> U(31)
    return z


def row_seeds(seed, first, end):
    """RowSeed(seed, i) for i in [first, end)."""
    i = np.arange(first, end, dtype=np.uint64)
    return U(seed) * GAMMA ^ (i + U(1)) * U(0xD1B54A32D192ED03)


def draw(state, lo, hi):
    """Draw(): multiples of 2^-20 in [lo, hi), one draw per element of `state`."""
    span = U(int((hi - lo) / QUANTUM))
    return lo + (splitmix64(state) % span).astype(np.float64) * QUANTUM


def unit(state):
    """Unit(): [0, 1) in steps of 2^-53."""
    return (splitmix64(state) >> U(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def kmeans_points(seed, k, dim, first, end):
    """lloyd.h's GeneratePoint for points [first, end): an (end - first, dim) array."""
    with np.errstate(over="ignore"):
        state = row_seeds(seed, first, end)
        centre = splitmix64(state) % U(k)
        cstate = U(seed) * U(0x2545F4914F6CDD1D) + centre
        out = np.empty((end - first, dim))
        for d in range(dim):
            mid = draw(cstate, 10, 90)
            x = mid + draw(state, -8, 8) + draw(state, -8, 8)
            out[:, d] = np.where(x < 0, 0.0, np.where(x >= 100, 100 - QUANTUM, x))
    return out


def kmeans_initial_centroids(seed, k, dim, points):
    """lloyd.h's InitialCentroids: point j * (points / k) for j < k."""
    return np.vstack([kmeans_points(seed, k, dim, j * (points // k), j * (points // k) + 1) for j in range(k)])


def linreg_truth(seed, features):
    """gd.h's Truth(j) for j < features (w*)."""
    with np.errstate(over="ignore"):
        state = U(seed) * U(0x2545F4914F6CDD1D) + np.arange(features, dtype=np.uint64)
        return draw(state, -1, 1)


def linreg_rows(seed, features, first, end):
    """gd.h's Row for samples [first, end): x (n, features) and y (n)."""
    truth = linreg_truth(seed, features)
    with np.errstate(over="ignore"):
        state = row_seeds(seed, first, end)
        x = np.empty((end - first, features))
        y = np.zeros(end - first)
        for j in range(features):
            x[:, j] = draw(state, -1, 1)
            y = y + x[:, j] * truth[j]
        y = y + draw(state, -0.1, 0.1)
    return x, y


def exp_exact(x):
    """graph.h's Exp: exp by + * / only, elementwise in the same order."""
    ln2 = 0.69314718055994530942
    x = np.minimum(x, 700.0)
    k = np.trunc(x / ln2 + np.where(x < 0, -0.5, 0.5))
    r = x - k * ln2
    term = np.ones_like(x)
    total = np.ones_like(x)
    for i in range(1, 20):
        term = term * (r / i)
        total = total + term
    return np.where(x < -700, 0.0, np.ldexp(total, k.astype(np.int64)))  # *2 or /2 k times: exact here


def pagerank_edges(seed, vertices, first, end, mu=1.0, sigma=1.0):
    """graph.h's Make for vertices [first, end): (degrees, targets) in CSR order."""
    with np.errstate(over="ignore"):
        state = row_seeds(seed, first, end)
        z = np.full(end - first, -6.0)
        for _ in range(12):
            z = z + unit(state)
        d = exp_exact(mu + sigma * z)
        degree = np.where(d >= float(vertices - 1), vertices - 1, np.trunc(d)).astype(np.int64)
        # The k-th target of a vertex is SplitMix64's output at state + (k + 1) * gamma.
        starts = np.repeat(np.cumsum(degree) - degree, degree)
        k = np.arange(int(degree.sum()), dtype=np.uint64) - starts.astype(np.uint64)
        z = np.repeat(state, degree) + (k + U(1)) * GAMMA
        targets = (mix(z) % U(vertices)).astype(np.int64)
    return degree, targets
