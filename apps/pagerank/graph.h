// pagerank's graph and arithmetic (apps/pagerank/pagerank.cc): the model
// of apps/common/map_reduce.h, also used by its MPI peer (tests/bench/mpi).
#pragma once

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "../common/blocks.h"
#include "../common/random.h"

namespace pagerank {

constexpr int64_t kMass = int64_t(1) << 50;

using fox::apps::SplitMix64;
using fox::apps::Unit;

// exp(x) by + * / only (the same bits on every libm): x = k ln2 + r,
// |r| <= ln2 / 2, Taylor to 20 terms, times 2^k.
inline double Exp(double x) {
  constexpr double kLn2 = 0.69314718055994530942;
  if (x > 700) x = 700;
  if (x < -700) return 0;
  long k = long(x / kLn2 + (x < 0 ? -0.5 : 0.5));
  double r = x - double(k) * kLn2, term = 1, sum = 1;
  for (int i = 1; i < 20; ++i) {
    term *= r / i;
    sum += term;
  }
  for (; k > 0; --k) sum *= 2;
  for (; k < 0; ++k) sum /= 2;
  return sum;
}

// A block of vertices' out-edges (CSR).
struct Edges {
  std::vector<uint64_t> offsets;  // per vertex of the block, then the end
  std::vector<uint32_t> targets;
};

struct Config {
  uint64_t vertices = 100'000;
  double mu = 1.0;
  double sigma = 1.0;
  uint64_t iterations = 20;
  uint64_t seed = 1;
  uint64_t blocks = 64;
  template <class A>
  void serialize(A& ar) {
    ar(vertices, mu, sigma, iterations, seed, blocks);
  }
  using Block = Edges;
  uint64_t Rows() const { return vertices; }
  uint64_t Blocks() const { return blocks; }
  Block Make(uint64_t first, uint64_t end) const {
    Edges e;
    for (uint64_t v = first; v < end; ++v) {
      e.offsets.push_back(e.targets.size());
      uint64_t state = fox::apps::RowSeed(seed, v);
      double z = -6;  // Irwin-Hall: the sum of 12 uniforms, less 6
      for (int i = 0; i < 12; ++i) z += Unit(&state);
      double d = Exp(mu + sigma * z);
      uint64_t degree = d >= double(vertices - 1) ? vertices - 1 : uint64_t(d);
      for (uint64_t k = 0; k < degree; ++k) e.targets.push_back(uint32_t(SplitMix64(&state) % vertices));
    }
    e.offsets.push_back(e.targets.size());
    return e;
  }
};

// The rank arriving at each vertex (each) and the rank given to all
// (extra: vertices without out-edges, the divisions' remainders).
using Partial = fox::apps::Sums;

// Adds what the vertices of `e` (the first of them `first`) send, by
// their ranks, into p.
inline void Contribute(const Config& c, const std::vector<int64_t>& ranks, const Edges& e, uint64_t first, Partial* p) {
  if (p->each.empty()) p->each.assign(c.vertices, 0);
  for (size_t v = 0; v + 1 < e.offsets.size(); ++v) {
    int64_t rank = ranks[first + v];
    uint64_t degree = e.offsets[v + 1] - e.offsets[v];
    if (degree == 0) {
      p->extra += rank;
      continue;
    }
    int64_t share = rank / int64_t(degree);
    p->extra += rank - share * int64_t(degree);
    for (uint64_t j = e.offsets[v]; j < e.offsets[v + 1]; ++j) p->each[e.targets[j]] += share;
  }
}

struct PageRank {
  using Config = pagerank::Config;
  using Partial = pagerank::Partial;
  struct State {
    std::vector<int64_t> ranks;  // sum 2^50
    uint64_t step = 0;
    template <class A>
    void serialize(A& ar) {
      ar(ranks, step);
    }
    friend bool operator==(const State&, const State&) = default;
  };
  static constexpr const char* kName = "pagerank";

  static State Initial(const Config& c) {
    State s{std::vector<int64_t>(c.vertices, kMass / int64_t(c.vertices)), 0};
    for (uint64_t i = 0; i < uint64_t(kMass % int64_t(c.vertices)); ++i) s.ranks[i]++;
    return s;
  }
  static uint64_t Steps(const Config& c) { return c.iterations; }
  static void Map(const Config& c, const State& s, const fox::apps::Part<Config>& part, size_t k, Partial* p) {
    Contribute(c, s.ranks, part.block(k), part.first(k), p);
  }
  static void Update(const Config& c, const Partial& total, State* s) {
    int64_t given = 0;
    for (uint64_t i = 0; i < c.vertices; ++i) {
      s->ranks[i] = total.each.empty() ? 0 : total.each[i] / 100 * 85 + total.each[i] % 100 * 85 / 100;
      given += s->ranks[i];
    }
    int64_t rest = kMass - given, each = rest / int64_t(c.vertices), extra = rest % int64_t(c.vertices);
    for (uint64_t i = 0; i < c.vertices; ++i) s->ranks[i] += each + (int64_t(i) < extra ? 1 : 0);
    ++s->step;
  }
  static void Print(const Config& c, const State& s) {
    uint64_t checksum = 0;
    for (uint64_t i = 0; i < s.ranks.size(); ++i) checksum = checksum * 0x100000001B3ull + uint64_t(s.ranks[i]);
    std::vector<uint64_t> order(s.ranks.size());
    for (uint64_t i = 0; i < order.size(); ++i) order[i] = i;
    size_t top = std::min<size_t>(5, order.size());
    std::partial_sort(order.begin(), order.begin() + long(top), order.end(), [&](uint64_t a, uint64_t b) {
      return s.ranks[a] != s.ranks[b] ? s.ranks[a] > s.ranks[b] : a < b;
    });
    std::printf("pagerank: rank checksum %016" PRIx64 " after %" PRIu64 " steps\n", checksum, s.step);
    std::string line = "pagerank: top vertices:";
    for (size_t i = 0; i < top; ++i) {
      char v[64];
      std::snprintf(v, sizeof v, " %" PRIu64 " (%.9f)", order[i], double(s.ranks[order[i]]) / double(kMass));
      line += v;
    }
    std::printf("%s\n", line.c_str());
  }
};

}  // namespace pagerank
