// uts: Unbalanced Tree Search over every place of an APGAS job, on
// lifeline-based global load balancing (fox/apgas/glb.h; issue 42).
//
//   fox run uts [--places N] -- [tree=t1|t1l|t1xl] [depth=D] [seed=S] [n=ITEMS] [w=STEALS]
//                               [check=on|off] [resilient=on|off] [epoch_ms=MS]
//                               [trace=on|off]
//
// The tree is one of UTS's geometric trees of fixed shape (uts_tree.h):
// t1 (depth 10, seed 19: 4,130,071 nodes), t1l (depth 13, seed 29:
// 102,181,082 nodes, the default) or t1xl (depth 15, seed 29: 4,230,646,601
// nodes), b = 4; depth= and seed= change the chosen one. Place 0 holds the
// root; the others steal (a worker per activity core of each place). Prints
// the count, the time and the rate, the steals; with check=on (the default for t1 and smaller trees) it then
// counts the tree alone at place 0 and says whether the counts are the
// same. resilient=on: the search saves every worker's work every epoch_ms
// (default 1000) and a place that dies (but place 0) loses nothing: the
// count is the same (glb.h); trace=on prints each epoch saved and each
// restore. Exit status 0; 1 if the counts differ or, not
// resilient, a place died (the DeadPlaceException is printed); 2 for bad
// arguments.
#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "../common/args.h"
#include "fox/apgas/apgas.h"
#include "fox/apgas/glb.h"
#include "fox/clock.h"
#include "uts_tree.h"

namespace {

using fox::apgas::Place;
using fox::apps::uts::Search;
using fox::apps::uts::Tree;

double Seconds(uint64_t ns) { return double(ns) / 1e9; }

}  // namespace

int main(int argc, char** argv) {
  std::string name = "t1l", check = "auto", resilient = "off", trace = "off";
  uint64_t depth = 0, seed = UINT64_MAX, n = 511, w = 1, epoch_ms = 1000;
  fox::apps::Args args("uts");
  args.Choice("tree", &name, "t1|t1l|t1xl")
      .UInt("depth", &depth, 1, 40)
      .UInt("seed", &seed, 0, UINT32_MAX)
      .UInt("n", &n, 1, 1 << 20)
      .UInt("w", &w, 0, 64)
      .Choice("check", &check, "on|off|auto")
      .Choice("resilient", &resilient, "on|off")
      .UInt("epoch_ms", &epoch_ms, 1, 3'600'000)
      .Choice("trace", &trace, "on|off");
  if (!args.Parse(argc, argv)) return 2;
  Tree tree;
  tree.depth = name == "t1" ? 10 : name == "t1l" ? 13 : 15;
  tree.seed = name == "t1" ? 19 : 29;
  if (depth != 0) tree.depth = uint32_t(depth);
  if (seed != UINT64_MAX) tree.seed = uint32_t(seed);
  const bool verify = check == "on" || (check == "auto" && tree.depth <= 10);
  fox::apgas::GlbParams params;
  params.n = n;
  params.w = uint32_t(w);
  params.resilient = resilient == "on";
  params.epoch_ms = epoch_ms;
  params.trace = trace == "on";
  return fox::apgas::Main(argc, argv, [=] {
    std::vector<Place> live;
    for (Place p : fox::apgas::places()) {
      if (!fox::apgas::isDead(p)) live.push_back(p);
    }
    fox::apgas::GlbStats stats;
    uint64_t t0 = fox::clock::NowNs(), nodes = 0;
    try {
      nodes = fox::apgas::glb<Search, uint64_t>(
          live,
          [tree](uint64_t index) {
            Search s(tree);
            if (index == 0) s.SeedRoot();
            return s;
          },
          [](uint64_t a, uint64_t b) { return a + b; }, params, &stats);
    } catch (const fox::apgas::MultipleExceptions& m) {
      std::printf("uts: a place died during the search: %s: its work is lost (resilient=on keeps it)\n", m.what());
      throw;
    }
    uint64_t ns = fox::clock::NowNs() - t0;
    std::printf("uts: %s tree (geometric, depth %u, b 4, seed %u): %" PRIu64
                " nodes over %zu places (%d worker(s) each) in %.3f s: %.3f M nodes/s\n",
                name.c_str(), tree.depth, tree.seed, nodes, live.size(), std::max(1, fox::apgas::activityCores()),
                Seconds(ns), double(nodes) / Seconds(ns) / 1e6);
    std::printf("uts: %" PRIu64 " chunks of %" PRIu64 ", %" PRIu64 " steals (%" PRIu64 " failed), %" PRIu64
                " lifeline deals, %" PRIu64 " lifelines asked\n",
                stats.chunks, params.n, stats.steals, stats.failed_steals, stats.lifeline_deals, stats.lifeline_asks);
    if (params.resilient) {
      std::printf("uts: resilient: %" PRIu64 " epochs of %" PRIu64 " ms, %" PRIu64 " saves (%.3f s), %" PRIu64
                  " places lost, %" PRIu64 " restores (%.3f s)\n",
                  stats.epochs, params.epoch_ms, stats.checkpoints, stats.checkpoint_s, stats.failures, stats.restores,
                  stats.restore_s);
    }
    if (verify) {
      Search alone(tree);
      alone.SeedRoot();
      uint64_t s0 = fox::clock::NowNs();
      // In chunks, each an activity of its own, so that the place's core
      // serves its transport between them (hosted, one core: its
      // heartbeats; else the others would declare place 0 dead).
      for (bool more = true; more;) {
        fox::apgas::finish([&] { fox::apgas::async([&] { more = alone.process(1 << 15); }); });
      }
      uint64_t alone_ns = fox::clock::NowNs() - s0;
      bool same = alone.result() == nodes;
      std::printf("uts: counted alone at place 0: %" PRIu64 " nodes in %.3f s (%.3f M nodes/s): %s\n", alone.result(),
                  Seconds(alone_ns), double(alone.result()) / Seconds(alone_ns) / 1e6,
                  same ? "the same count" : "DIFFERENT");
      if (!same) throw std::runtime_error("uts: the counts differ");
    }
  });
}
