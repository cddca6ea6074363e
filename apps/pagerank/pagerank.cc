// pagerank: PageRank by power iterations over a generated graph whose
// out-degrees are log-normal (the 2017 report's PageRank input), on every
// place of an APGAS job, resilient through the iterative executors
// (fox/apgas/iterative.h, apps/common/map_reduce.h).
//
//   fox run pagerank [--places N] [--spares S] -- [vertices=N] [mu=M]
//       [sigma=S] [iterations=I] [seed=S] [blocks=B] [executor=global|spmd]
//       [every=N] [mtbf=SECONDS] [shrink=1|0] [check=1|0] [trace=1|0] [input=FILE]
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
// first vertices). input=FILE: the graph is instead the edge list FILE on
// place 0's machine ("SOURCE TARGET" lines, each source's edges together;
// graph.h's Load), each place reading its blocks' bytes through the
// FileSystem Ebb. A run through failures gives the one-place bits
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
#include "graph.h"
#include "fox/apgas/apgas.h"

int main(int argc, char** argv) {
  pagerank::Config c;
  fox::apps::RunOptions o;
  fox::apps::Args args("pagerank");
  args.UInt("vertices", &c.vertices, 2, uint64_t(1) << 26)
      .Real("mu", &c.mu, -10, 10)
      .Real("sigma", &c.sigma, 0, 10)
      .UInt("iterations", &c.iterations, 0, 1'000'000)
      .UInt("seed", &c.seed, 0, UINT64_MAX)
      .UInt("blocks", &c.blocks, 1, 1 << 16)
      .Text("input", &c.input);
  o.AddTo(args);
  if (!args.Parse(argc, argv)) return 2;
  return fox::apgas::Main(argc, argv, [c, o]() mutable {
    if (c.input.empty()) {
      std::printf("pagerank: %" PRIu64 " vertices, out-degrees log-normal (mu %g, sigma %g)\n", c.vertices, c.mu,
                  c.sigma);
    } else {
      pagerank::Load(&c);
      std::printf("pagerank: %" PRIu64 " vertices, the edges of %s\n", c.vertices, c.input.c_str());
    }
    fox::apps::RunIterative<pagerank::PageRank>(c, o);
  });
}
