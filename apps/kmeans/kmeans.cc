// kmeans: Lloyd's algorithm over generated points on every place of an
// APGAS job, resilient through the iterative executors
// (fox/apgas/iterative.h): checkpointed every few steps, a dead place's
// work taken by a spare or spread over the survivors.
//
//   fox run kmeans [--places N] [--spares S] -- [points=N] [dim=D] [k=K]
//       [iterations=I] [seed=S] [blocks=B] [executor=global|spmd]
//       [every=N] [mtbf=SECONDS] [shrink=1|0] [check=1|0] [trace=1|0] [input=FILE]
//
// The points (lloyd.h) are generated where they are used, in blocks dealt
// to the active places by index (apps/common/blocks.h), or read there from
// the file `input` on place 0's machine (a point per line: its coordinates
// separated by commas or spaces; points= and dim= then come from the file;
// each place reads its blocks' splits through the FileSystem Ebb); the initial
// centroids are the first point of each k-th of them. A step assigns every
// point to its nearest centroid at the place holding it (its blocks spread
// over the place's activity cores) and moves each centroid to its points'
// mean; executor=global gathers the sums at place 0, spmd allreduces them
// (apps/common/map_reduce.h). The checkpoint is the centroids and the step.
// every=N: a checkpoint every N steps, 0: Young's interval for mtbf.
//
// Prints the cost and the centroids, and (check=1) compares them with the
// same steps at place 0 alone: the sums are exact (lloyd.h), so a run
// through failures must match bit for bit. Exit status 0; 1 on a mismatch
// or a failure it could not recover from; 2 for bad arguments.
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "../common/args.h"
#include "../common/map_reduce.h"
#include "fox/apgas/apgas.h"
#include "lloyd.h"

namespace {

struct Kmeans {
  using Config = kmeans::Config;
  using Partial = kmeans::Partial;
  struct State {
    std::vector<double> centroids;
    uint64_t cost = 0;  // of the last step's assignment, in 2^-16
    uint64_t step = 0;
    template <class A>
    void serialize(A& ar) {
      ar(centroids, cost, step);
    }
    friend bool operator==(const State&, const State&) = default;
  };
  static constexpr const char* kName = "kmeans";

  static State Initial(const Config& c) { return State{kmeans::InitialCentroids(c), 0, 0}; }
  static uint64_t Steps(const Config& c) { return c.iterations; }
  static void Map(const Config& c, const State& s, const fox::apps::Part<Config>& part, size_t k, Partial* p) {
    kmeans::Assign(c, s.centroids, part.block(k).data.data(), part.block(k).count(), p);
  }
  static void Update(const Config& c, const Partial& total, State* s) {
    s->centroids = kmeans::Update(c, s->centroids, total);
    s->cost = total.cost;
    ++s->step;
  }
  static void Print(const Config& c, const State& s) {
    std::printf("kmeans: cost %.6f after %" PRIu64 " steps\n", double(s.cost) / 65536.0, s.step);
    for (uint64_t j = 0; j < c.k && j < 16; ++j) {
      std::string line = "kmeans: centroid " + std::to_string(j) + ":";
      for (uint64_t d = 0; d < c.dim && d < 8; ++d) {
        char v[32];
        std::snprintf(v, sizeof v, " %.6f", s.centroids[j * c.dim + d]);
        line += v;
      }
      std::printf("%s\n", line.c_str());
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  kmeans::Config c;
  fox::apps::RunOptions o;
  fox::apps::Args args("kmeans");
  args.UInt("points", &c.points, 1, uint64_t(1) << 26)
      .UInt("dim", &c.dim, 1, 64)
      .UInt("k", &c.k, 1, 1024)
      .UInt("iterations", &c.iterations, 0, 1'000'000)
      .UInt("seed", &c.seed, 0, UINT64_MAX)
      .UInt("blocks", &c.blocks, 1, 1 << 16)
      .Text("input", &c.input);
  o.AddTo(args);
  if (!args.Parse(argc, argv)) return 2;
  if (c.input.empty() && c.k > c.points) {
    std::printf("kmeans: k=%" PRIu64 " is more than points=%" PRIu64 "\n", c.k, c.points);
    return 2;
  }
  return fox::apgas::Main(argc, argv, [c, o]() mutable {
    if (!c.input.empty()) kmeans::Load(&c);
    std::printf("kmeans: %" PRIu64 " points of %" PRIu64 " dimensions, k=%" PRIu64 "\n", c.points, c.dim, c.k);
    fox::apps::RunIterative<Kmeans>(c, o);
  });
}
