// KMeans' data and arithmetic (Lloyd's algorithm), shared by both of
// kmeans.cc's executors and its one-place reference.
//
// Points: `points` points of `dim` coordinates in [0, 100), around `k`
// centres, generated from `seed` point by point (point i from its own
// generator: any place generates any point alike). Coordinates are
// multiples of 2^-20, so that the sums of a cluster's coordinates are
// exact in a double while they stay below 2^33 (points <= 2^26): a step
// adds them in any order (any number of places, any partition, after any
// failure) and gets the same bits. Costs are integers (squared distance in
// units of 2^-16). So a run with failures prints what one without prints.
//
// The points are the app's input in blocks (apps/common/blocks.h).
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "../common/blocks.h"
#include "../common/random.h"

namespace kmeans {

struct Config {
  uint64_t points = 200'000;
  uint64_t dim = 4;
  uint64_t k = 8;
  uint64_t iterations = 20;
  uint64_t seed = 1;
  uint64_t blocks = 64;
  template <class A>
  void serialize(A& ar) {
    ar(points, dim, k, iterations, seed, blocks);
  }
  // The input's shape and rows (apps/common/blocks.h).
  using Block = fox::apps::Dense;
  uint64_t Rows() const { return points; }
  uint64_t Blocks() const { return blocks; }
  Block Make(uint64_t first, uint64_t end) const;
};

using fox::apps::Draw;
using fox::apps::kQuantum;
using fox::apps::SplitMix64;

// Point i's coordinates into out[0..dim).
inline void GeneratePoint(const Config& c, uint64_t i, double* out) {
  uint64_t state = fox::apps::RowSeed(c.seed, i);
  uint64_t centre = SplitMix64(&state) % c.k;
  uint64_t cstate = c.seed * 0x2545F4914F6CDD1Dull + centre;
  for (uint64_t d = 0; d < c.dim; ++d) {
    double mid = Draw(&cstate, 10, 90);
    double x = mid + Draw(&state, -8, 8) + Draw(&state, -8, 8);
    out[d] = x < 0 ? 0 : (x >= 100 ? 100 - kQuantum : x);
  }
}

// What one step gathers: per centroid the sums of its points' coordinates
// and their count, and the total cost. Added in any order, the same.
struct Partial {
  std::vector<double> sums;      // k * dim
  std::vector<uint64_t> counts;  // k
  uint64_t cost = 0;             // sum of squared distances, in 2^-16
  template <class A>
  void serialize(A& ar) {
    ar(sums, counts, cost);
  }
  Partial& operator+=(const Partial& o) {
    if (sums.empty()) return *this = o;
    for (size_t i = 0; i < sums.size() && i < o.sums.size(); ++i) sums[i] += o.sums[i];
    for (size_t i = 0; i < counts.size() && i < o.counts.size(); ++i) counts[i] += o.counts[i];
    cost += o.cost;
    return *this;
  }
};

// The first k points, the initial centroids (as Spark's KMeans given them).
inline std::vector<double> InitialCentroids(const Config& c) {
  std::vector<double> centroids(c.k * c.dim);
  for (uint64_t j = 0; j < c.k; ++j) GeneratePoint(c, j * (c.points / c.k), &centroids[j * c.dim]);
  return centroids;
}

// Assigns points [0, n) of `data` (n * dim) to their nearest centroid
// (the lowest index on a tie), adding into `p`.
inline void Assign(const Config& c, const std::vector<double>& centroids, const double* data, uint64_t n, Partial* p) {
  if (p->sums.empty()) {
    p->sums.assign(c.k * c.dim, 0);
    p->counts.assign(c.k, 0);
  }
  for (uint64_t i = 0; i < n; ++i) {
    const double* x = data + i * c.dim;
    double best = std::numeric_limits<double>::infinity();
    uint64_t nearest = 0;
    for (uint64_t j = 0; j < c.k; ++j) {
      const double* m = &centroids[j * c.dim];
      double d2 = 0;
      for (uint64_t d = 0; d < c.dim; ++d) d2 += (x[d] - m[d]) * (x[d] - m[d]);
      if (d2 < best) {
        best = d2;
        nearest = j;
      }
    }
    for (uint64_t d = 0; d < c.dim; ++d) p->sums[nearest * c.dim + d] += x[d];
    p->counts[nearest]++;
    p->cost += uint64_t(best * 65536.0 + 0.5);
  }
}

// The new centroids: each its points' mean (unchanged when it has none).
inline std::vector<double> Update(const Config& c, const std::vector<double>& old, const Partial& total) {
  std::vector<double> next = old;
  for (uint64_t j = 0; j < c.k; ++j) {
    if (total.counts.size() <= j || total.counts[j] == 0) continue;
    for (uint64_t d = 0; d < c.dim; ++d) next[j * c.dim + d] = total.sums[j * c.dim + d] / double(total.counts[j]);
  }
  return next;
}

inline Config::Block Config::Make(uint64_t first, uint64_t end) const {
  return fox::apps::MakeDense(first, end, dim, [this](uint64_t i, double* out) { GeneratePoint(*this, i, out); });
}

}  // namespace kmeans
