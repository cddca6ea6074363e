// pagerank's graph and arithmetic (apps/pagerank/pagerank.cc): the model
// of apps/common/map_reduce.h, also used by its MPI peer (tests/bench/mpi).
#pragma once

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "../common/blocks.h"
#include "../common/input.h"
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
  std::vector<uint32_t> sources;  // a file's: the vertex of each offset (else the block's first + its index)
};

struct Config {
  uint64_t vertices = 100'000;
  double mu = 1.0;
  double sigma = 1.0;
  uint64_t iterations = 20;
  uint64_t seed = 1;
  uint64_t blocks = 64;
  std::string input;             // an edge list, or "" to generate the graph
  std::vector<uint64_t> starts;  // its blocks' first bytes, then its size (Load)
  template <class A>
  void serialize(A& ar) {
    ar(vertices, mu, sigma, iterations, seed, blocks, input, starts);
  }
  using Block = Edges;
  uint64_t Rows() const { return vertices; }
  uint64_t Blocks() const { return blocks; }
  Block MakeBlock(uint64_t b) const;
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

// A line of an edge list: its source and target vertex.
inline std::pair<uint32_t, uint32_t> ParseEdge(const std::string& path, uint64_t offset,
                                               const std::vector<std::string_view>& fields) {
  if (fields.size() != 2) fox::apps::InputError(path, offset, "an edge is two vertices: SOURCE TARGET");
  constexpr uint64_t kLimit = uint64_t(1) << 26;
  return {uint32_t(fox::apps::ParseIndex(path, offset, fields[0], kLimit)),
          uint32_t(fox::apps::ParseIndex(path, offset, fields[1], kLimit))};
}

// Block b of a file: the edges of the sources whose first edge lies in
// bytes [starts[b], starts[b + 1]) (Load puts a source's edges in one block).
inline Edges Config::MakeBlock(uint64_t b) const {
  if (input.empty()) return Make(fox::apps::First(*this, b), fox::apps::First(*this, b + 1));
  Edges e;
  std::string text = fox::apps::ReadBytes(input, starts[b], starts[b + 1] - starts[b]);
  fox::apps::ForEachLine(text, starts[b], [&](uint64_t offset, const std::vector<std::string_view>& fields) {
    auto [source, target] = ParseEdge(input, offset, fields);
    if (source >= vertices || target >= vertices)
      fox::apps::InputError(input, offset, "the file changed since it was read");
    if (e.sources.empty() || e.sources.back() != source) {
      e.offsets.push_back(e.targets.size());
      e.sources.push_back(source);
    }
    e.targets.push_back(target);
  });
  e.offsets.push_back(e.targets.size());
  return e;
}

// Reads the edge list `c->input` before the steps (place 0): a line
// "SOURCE TARGET" per edge (vertex ids below 2^26; '#' lines are comments),
// each source's edges on consecutive lines (as SNAP's files are; `sort -n
// -k1,1` makes it so). Sets the vertex count (the largest id + 1) and the
// blocks' byte ranges: block b from the first source whose edges start at
// or after size * b / blocks. Throws std::runtime_error naming the file and
// the offset of a bad line.
inline void Load(Config* c) {
  uint64_t size = fox::apps::FileSize(c->input);
  std::vector<bool> seen;
  uint64_t largest = 0, edges = 0;
  int64_t last = -1;
  c->starts.assign(1, 0);
  fox::apps::ForEachFileLine(
      c->input, size,
      [&](uint64_t offset, const std::vector<std::string_view>& fields) {
        auto [source, target] = ParseEdge(c->input, offset, fields);
        largest = std::max<uint64_t>(largest, std::max(source, target));
        ++edges;
        if (int64_t(source) == last) return;
        if (seen.size() <= source) seen.resize(size_t(source) + 1);
        if (seen[source]) {
          fox::apps::InputError(c->input, offset,
                                "the edges of vertex " + std::to_string(source) +
                                    " are not on consecutive lines: sort the file by source (sort -n -k1,1)");
        }
        seen[source] = true;
        last = source;
        // A source's first edge: it starts the next blocks whose share of the bytes it reached.
        while (c->starts.size() < c->blocks && offset >= size * c->starts.size() / c->blocks)
          c->starts.push_back(offset);
      },
      [] { return true; });
  if (edges == 0) throw std::runtime_error(c->input + ": no edges");
  while (c->starts.size() <= c->blocks) c->starts.push_back(size);
  c->vertices = std::max<uint64_t>(largest + 1, 2);
}

// The rank arriving at each vertex (each) and the rank given to all
// (extra: vertices without out-edges, the divisions' remainders).
using Partial = fox::apps::Sums;

// Adds what the vertices of `e` (the first of them `first`) send, by
// their ranks, into p.
inline void Contribute(const Config& c, const std::vector<int64_t>& ranks, const Edges& e, uint64_t first, Partial* p) {
  if (p->each.empty()) {
    p->each.reserve(c.vertices + 1);  // Flat's extra element (the SPMD step's allreduce) without a reallocation
    p->each.assign(c.vertices, 0);
  }
  for (size_t v = 0; v + 1 < e.offsets.size(); ++v) {
    int64_t rank = ranks[e.sources.empty() ? first + v : e.sources[v]];
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
  static size_t Width(const Config& c) { return c.vertices; }
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
