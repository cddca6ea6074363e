// KMeans' data and arithmetic (Lloyd's algorithm), shared by both of
// kmeans.cc's executors and its one-place reference.
//
// Points: `points` points of `dim` coordinates in [0, 100), around `k`
// centres, generated from `seed` point by point (point i from its own
// generator: any place generates any point alike); or the lines of the
// file `input` (a point per line, its coordinates separated by commas or
// spaces; apps/common/input.h), read where they are used. Coordinates are
// multiples of 2^-20 (a file's rounded to the nearest), and a step sums a
// cluster's coordinates as integers in units of 2^-20 (exact while the
// magnitudes of a cluster's coordinates sum below 2^43: 2^20 points of
// coordinates below 8 million) and costs as integers (squared distances
// in units of 2^-16), so that it adds them in any order (any number of
// places, any partition, after any failure) and gets the same bits. So a
// run with failures prints what one without prints.
//
// The points are the app's input in blocks (apps/common/blocks.h); a file's
// blocks are its splits (input.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "../common/blocks.h"
#include "../common/input.h"
#include "../common/random.h"

namespace kmeans {

struct Config {
  uint64_t points = 200'000;
  uint64_t dim = 4;
  uint64_t k = 8;
  uint64_t iterations = 20;
  uint64_t seed = 1;
  uint64_t blocks = 64;
  std::string input;            // a file of points, or "" to generate them
  uint64_t input_size = 0;      // its bytes (Load)
  std::vector<double> initial;  // a file's initial centroids (Load)
  template <class A>
  void serialize(A& ar) {
    ar(points, dim, k, iterations, seed, blocks, input, input_size, initial);
  }
  // The input's shape and rows (apps/common/blocks.h).
  using Block = fox::apps::Dense;
  uint64_t Rows() const { return points; }
  uint64_t Blocks() const { return blocks; }
  Block Make(uint64_t first, uint64_t end) const;
  Block MakeBlock(uint64_t b) const;
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
  std::vector<int64_t> sums;     // k * dim, in units of 2^-20
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

// The initial centroids (as Spark's KMeans given them): the first point
// of each k-th of the points.
inline std::vector<double> InitialCentroids(const Config& c) {
  if (!c.input.empty()) return c.initial;
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
    for (uint64_t d = 0; d < c.dim; ++d) p->sums[nearest * c.dim + d] += int64_t(x[d] * (1 << 20));
    p->counts[nearest]++;
    p->cost += uint64_t(best * 65536.0 + 0.5);
  }
}

// The new centroids: each its points' mean (unchanged when it has none).
inline std::vector<double> Update(const Config& c, const std::vector<double>& old, const Partial& total) {
  std::vector<double> next = old;
  for (uint64_t j = 0; j < c.k; ++j) {
    if (total.counts.size() <= j || total.counts[j] == 0) continue;
    for (uint64_t d = 0; d < c.dim; ++d)
      next[j * c.dim + d] = double(total.sums[j * c.dim + d]) * kQuantum / double(total.counts[j]);
  }
  return next;
}

inline Config::Block Config::Make(uint64_t first, uint64_t end) const {
  return fox::apps::MakeDense(first, end, dim, [this](uint64_t i, double* out) { GeneratePoint(*this, i, out); });
}

// The points of a file's line (at `offset`) into out: `dim` coordinates
// rounded to multiples of 2^-20, each of magnitude below 2^32.
inline void ParsePoint(const Config& c, uint64_t offset, const std::vector<std::string_view>& fields, double* out) {
  if (fields.size() != c.dim) {
    fox::apps::InputError(
        c.input, offset,
        std::to_string(fields.size()) + " coordinates where the first point has " + std::to_string(c.dim));
  }
  for (uint64_t d = 0; d < c.dim; ++d) {
    double v = fox::apps::ParseReal(c.input, offset, fields[d]);
    if (v <= -4294967296.0 || v >= 4294967296.0) fox::apps::InputError(c.input, offset, "a coordinate beyond 2^32");
    out[d] = std::nearbyint(v * (1 << 20)) * kQuantum;
  }
}

// Block b: generated, or split b of the file's `blocks` (input.h).
inline Config::Block Config::MakeBlock(uint64_t b) const {
  if (input.empty()) return Make(fox::apps::First(*this, b), fox::apps::First(*this, b + 1));
  fox::apps::Split split = fox::apps::ReadSplit(input, input_size, b, blocks);
  Block block{dim, {}};
  std::vector<double> x(dim);
  fox::apps::ForEachLine(split.text, split.offset, [&](uint64_t offset, const std::vector<std::string_view>& fields) {
    ParsePoint(*this, offset, fields, x.data());
    block.data.insert(block.data.end(), x.begin(), x.end());
  });
  return block;
}

// Reads the file `c->input` before the steps (place 0): its size, the
// points' count and dimensions (the first point's), every line checked,
// and the initial centroids (the first point of each k-th). Throws
// std::runtime_error naming the file and the offset of a bad line.
inline void Load(Config* c) {
  c->input_size = fox::apps::FileSize(c->input);
  c->points = 0;
  c->dim = 0;
  std::vector<double> x;
  fox::apps::ForEachFileLine(
      c->input, c->input_size,
      [&](uint64_t offset, const std::vector<std::string_view>& fields) {
        if (c->dim == 0) c->dim = fields.size();
        x.resize(c->dim);
        ParsePoint(*c, offset, fields, x.data());
        ++c->points;
      },
      [] { return true; });
  if (c->points < c->k) {
    throw std::runtime_error(c->input + ": " + std::to_string(c->points) +
                             " points, fewer than k=" + std::to_string(c->k));
  }
  if (c->dim > 64) throw std::runtime_error(c->input + ": more than 64 coordinates per point");
  uint64_t index = 0;  // again, up to the last initial centroid
  fox::apps::ForEachFileLine(
      c->input, c->input_size,
      [&](uint64_t offset, const std::vector<std::string_view>& fields) {
        if (c->initial.size() < c->k * c->dim && index++ == c->initial.size() / c->dim * (c->points / c->k)) {
          ParsePoint(*c, offset, fields, x.data());
          c->initial.insert(c->initial.end(), x.begin(), x.end());
        }
      },
      [&] { return c->initial.size() < c->k * c->dim; });
}

}  // namespace kmeans
