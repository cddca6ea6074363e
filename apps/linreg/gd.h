// linreg's data and arithmetic (apps/linreg/linreg.cc): the model of
// apps/common/map_reduce.h, also used by its MPI peer (tests/bench/mpi).
#pragma once

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "../common/blocks.h"
#include "../common/random.h"

namespace linreg {

using fox::apps::Draw;

// v in units of 1/scale, rounded, saturated at +-2^31 units.
inline int64_t Fixed(double v, double scale) {
  double u = std::round(v * scale);
  constexpr double kMax = 2147483648.0;
  return u > kMax ? int64_t(kMax) : (u < -kMax ? -int64_t(kMax) : int64_t(u));
}
constexpr double kGradScale = 16777216.0;  // 2^24
constexpr double kErrScale = 65536.0;      // 2^16

struct Config {
  uint64_t samples = 100'000;
  uint64_t features = 16;
  uint64_t iterations = 20;
  double rate = 1.0;
  double lambda = 0;
  uint64_t seed = 1;
  uint64_t blocks = 64;
  template <class A>
  void serialize(A& ar) {
    ar(samples, features, iterations, rate, lambda, seed, blocks);
  }
  using Block = fox::apps::Dense;  // rows: x, then y
  uint64_t Rows() const { return samples; }
  uint64_t Blocks() const { return blocks; }
  Block Make(uint64_t first, uint64_t end) const {
    return fox::apps::MakeDense(first, end, features + 1, [this](uint64_t i, double* out) { Row(i, out); });
  }
  // Coefficient j of those the targets come from (w*).
  double Truth(uint64_t j) const {
    uint64_t state = seed * 0x2545F4914F6CDD1Dull + j;
    return Draw(&state, -1, 1);
  }
  void Row(uint64_t i, double* out) const {
    uint64_t state = fox::apps::RowSeed(seed, i);
    double y = 0;
    for (uint64_t j = 0; j < features; ++j) {
      out[j] = Draw(&state, -1, 1);
      y += out[j] * Truth(j);
    }
    out[features] = y + Draw(&state, -0.1, 0.1);
  }
};

// The gradient per feature (each, in 2^-24) and the sum of r^2 (extra, in
// 2^-16).
using Partial = fox::apps::Sums;

// Adds block's samples' gradient terms and squared residuals at w into p.
inline void Accumulate(const Config& c, const std::vector<double>& w, const fox::apps::Dense& block, Partial* p) {
  if (p->each.empty()) p->each.assign(c.features, 0);
  for (uint64_t i = 0; i < block.count(); ++i) {
    const double* x = block.row(i);
    double r = -x[c.features];
    for (uint64_t j = 0; j < c.features; ++j) r += x[j] * w[j];
    for (uint64_t j = 0; j < c.features; ++j) p->each[j] += Fixed(r * x[j], kGradScale);
    p->extra += Fixed(r * r, kErrScale);
  }
}

struct LinReg {
  using Config = linreg::Config;
  using Partial = linreg::Partial;
  struct State {
    std::vector<double> w;
    int64_t error = 0;  // the last step's sum of r^2, in 2^-16
    uint64_t step = 0;
    template <class A>
    void serialize(A& ar) {
      ar(w, error, step);
    }
    friend bool operator==(const State&, const State&) = default;
  };
  static constexpr const char* kName = "linreg";

  static State Initial(const Config& c) { return State{std::vector<double>(c.features, 0.0), 0, 0}; }
  static uint64_t Steps(const Config& c) { return c.iterations; }
  static void Map(const Config& c, const State& s, const fox::apps::Part<Config>& part, size_t k, Partial* p) {
    Accumulate(c, s.w, part.block(k), p);
  }
  static void Update(const Config& c, const Partial& total, State* s) {
    for (uint64_t j = 0; j < c.features && j < total.each.size(); ++j) {
      double g = double(total.each[j]) / kGradScale / double(c.samples);
      s->w[j] -= c.rate * (g + c.lambda * s->w[j]);
    }
    s->error = total.extra;
    ++s->step;
  }
  static void Print(const Config& c, const State& s) {
    double distance = 0;
    for (uint64_t j = 0; j < c.features; ++j) distance += (s.w[j] - c.Truth(j)) * (s.w[j] - c.Truth(j));
    std::printf("linreg: mean squared error %.9f after %" PRIu64 " steps; |w - w*| %.9f\n",
                double(s.error) / kErrScale / double(c.samples), s.step, std::sqrt(distance));
    std::string line = "linreg: coefficients:";
    for (uint64_t j = 0; j < c.features && j < 16; ++j) {
      char v[32];
      std::snprintf(v, sizeof v, " %.6f", s.w[j]);
      line += v;
    }
    std::printf("%s\n", line.c_str());
  }
};

}  // namespace linreg
