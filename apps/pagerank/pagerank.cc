// pagerank: PageRank by power iterations over a generated graph whose
// out-degrees are log-normal (the 2017 report's PageRank input), on every
// place of an APGAS job, resilient through the iterative executors
// (fox/apgas/iterative.h, apps/common/map_reduce.h).
//
//   fox run pagerank [--places N] [--spares S] -- [vertices=N] [mu=M]
//       [sigma=S] [iterations=I] [seed=S] [blocks=B] [executor=global|spmd]
//       [every=N] [mtbf=SECONDS] [shrink=1|0] [check=1|0]
//
// Vertex i has floor(exp(mu + sigma Z)) out-edges (Z standard normal, at
// most N - 1) to uniformly drawn vertices, all from seed and i alone
// (arithmetic only: exp is computed here, so that nodes and Linux draw the
// same graph); the vertices are the input's rows, in blocks dealt to the
// places by index, each place holding its vertices' out-edges. Ranks are
// integers summing to 2^50 (fixed point), so a step is exact in any order:
// each vertex sends rank / degree to each target, a vertex without edges
// (and the division's remainder) gives its rank to all; then
// rank' = 0.85 * in + the rest of 2^50 spread evenly (the remainder to the
// first vertices). A run through failures gives the one-place bits
// (check=1). The checkpoint is the rank vector (8 bytes a vertex).
//
// Prints the ranks' checksum and the top 5 vertices. Exit status 0; 1 on a
// mismatch or a failure it could not recover from; 2 for bad arguments.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "../common/args.h"
#include "../common/map_reduce.h"
#include "../common/random.h"
#include "fox/apgas/apgas.h"

namespace {

constexpr int64_t kMass = int64_t(1) << 50;

using fox::apps::SplitMix64;
using fox::apps::Unit;

// exp(x) by + * / only (the same bits on every libm): x = k ln2 + r,
// |r| <= ln2 / 2, Taylor to 20 terms, times 2^k.
double Exp(double x) {
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

struct PageRank {
  using Config = ::Config;
  using Partial = ::Partial;
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
    if (p->each.empty()) p->each.assign(c.vertices, 0);
    const Edges& e = part.block(k);
    uint64_t first = part.first(k);
    for (size_t v = 0; v + 1 < e.offsets.size(); ++v) {
      int64_t rank = s.ranks[first + v];
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

}  // namespace

int main(int argc, char** argv) {
  Config c;
  fox::apps::RunOptions o;
  fox::apps::Args args("pagerank");
  args.UInt("vertices", &c.vertices, 2, uint64_t(1) << 26)
      .Real("mu", &c.mu, -10, 10)
      .Real("sigma", &c.sigma, 0, 10)
      .UInt("iterations", &c.iterations, 0, 1'000'000)
      .UInt("seed", &c.seed, 0, UINT64_MAX)
      .UInt("blocks", &c.blocks, 1, 1 << 16);
  o.AddTo(args);
  if (!args.Parse(argc, argv)) return 2;
  return fox::apgas::Main(argc, argv, [c, o] {
    std::printf("pagerank: %" PRIu64 " vertices, out-degrees log-normal (mu %g, sigma %g)\n", c.vertices, c.mu,
                c.sigma);
    fox::apps::RunIterative<PageRank>(c, o);
  });
}
