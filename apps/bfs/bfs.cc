// bfs: Graph500's breadth-first search (its kernel 2) over a Kronecker graph
// on every place of an APGAS job: direction-optimizing (Beamer), over a
// 1-D partition of the vertices, each level's messages moved by Team
// collectives; every search validated as Graph500 validates it, TEPS as
// Graph500 reports them.
//
//   fox run bfs [--places N] -- [scale=S] [edgefactor=E] [roots=K] [seed=X]
//       [check=on|off]
//
// The graph (kronecker.h): 2^S vertices, E * 2^S edges, generated where it
// is used — place p generates edges [pM/P, (p+1)M/P) and sends each to the
// owners of its two ends (an alltoall per 2^21 edges), which keep it in
// compressed rows (local_graph.h). K roots are drawn from the seed among the
// vertices with an edge (Graph500: 64; default here 8). A search: from the
// root's owner, level by level, top-down (each place scans its frontier's
// edges, claims its own vertices, sends the others' to their owners in one
// alltoall) or bottom-up (the frontier's bitmap gathered at every place by
// an alltoall, each unreached vertex looks for a parent in it), the
// direction chosen each level from the frontier's and the unexplored edges
// (one allreduce). A place's scan is shared by its activity cores. The time
// is from a barrier to the last place's end; TEPS are the input edges of
// the root's component over it, the summary their harmonic mean. Then
// (check=on) the tree is validated (validate.h: every place checks its
// vertices and their edges against every vertex's depth, gathered).
//
// Prints the graph, a line per root (vertices and edges reached, steps,
// the depths' sum, time, MTEPS, validity) and the summary. Exit status 0; 1
// if a tree is invalid or a place died (the graph is lost: bfs is not
// resilient; the DeadPlaceException names the place); 2 for bad arguments.
#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "../common/args.h"
#include "fox/apgas/apgas.h"
#include "fox/apgas/global_memory.h"
#include "fox/apgas/team.h"
#include "fox/clock.h"
#include "search.h"

namespace {

using fox::apgas::Place;
using fox::apgas::Team;
using namespace fox::apps::bfs;

// search.h's communicator over a Team of places, the scans over the
// place's activity cores.
class TeamComm {
 public:
  explicit TeamComm(std::vector<Place> group) : team_(std::move(group)) {}
  uint32_t Rank() const { return uint32_t(team_.rank()); }
  uint32_t Parts() const { return uint32_t(team_.places().size()); }
  std::vector<std::vector<uint32_t>> Alltoall(std::vector<std::vector<uint32_t>> out) { return team_.alltoall(out); }
  std::vector<uint64_t> Allgather(const std::vector<uint64_t>& mine) {
    auto pieces = team_.alltoall(std::vector<std::vector<uint64_t>>(Parts(), mine));
    std::vector<uint64_t> all;
    all.reserve(mine.size() * pieces.size());
    for (const auto& p : pieces) all.insert(all.end(), p.begin(), p.end());
    return all;
  }
  std::vector<uint64_t> Sum(const std::vector<uint64_t>& values) {
    return team_.allreduce(values, Team::Sum<uint64_t>());
  }
  double Max(double value) { return team_.allreduce(value, Team::Max<double>()); }
  void Barrier() { team_.barrier(); }
  uint64_t Workers() const { return uint64_t(std::max(1, fox::apgas::activityCores())); }
  // f(worker, lo, hi) over shares of [0, count), an activity each (none
  // smaller than 1024 unless there is only one): global memory's split.
  template <class F>
  void Parallel(uint64_t count, const F& f) {
    fox::apgas::finish(
        [&] { fox::apgas::overCores(count, 1024, [&f](uint64_t k, uint64_t lo, uint64_t hi) { f(k, lo, hi); }); });
  }
  uint64_t NowNs() const { return fox::clock::NowNs(); }

 private:
  Team team_;
};

void Member(Graph500Run c, std::vector<Place> group) {
  TeamComm comm(group);
  int cores = fox::apgas::activityCores();
  std::string over = std::to_string(group.size()) + " places (" + std::to_string(cores) + " activity core" +
                     (cores == 1 ? "" : "s") + " a place)";
  uint64_t invalid = Graph500(comm, "bfs", c, over);
  if (comm.Rank() == 0 && invalid > 0) throw std::runtime_error("bfs: " + std::to_string(invalid) + " invalid trees");
}

}  // namespace

int main(int argc, char** argv) {
  Graph500Run c;
  std::string check = "on";
  fox::apps::Args args("bfs");
  args.UInt("scale", &c.scale, 1, 30)
      .UInt("edgefactor", &c.edgefactor, 1, 1024)
      .UInt("roots", &c.roots, 1, 1024)
      .UInt("seed", &c.seed, 0, UINT64_MAX)
      .Choice("check", &check, "on|off");
  if (!args.Parse(argc, argv)) return 2;
  c.check = check == "on";
  return fox::apgas::Main(argc, argv, [c] {
    std::vector<Place> live;
    for (Place p : fox::apgas::places()) {
      if (!fox::apgas::isDead(p)) live.push_back(p);
    }
    try {
      fox::apgas::finish([&] {
        for (Place p : live)
          fox::apgas::asyncAt(
              p, [](Graph500Run cfg, std::vector<Place> g) { Member(cfg, g); }, c, live);
      });
    } catch (const fox::apgas::MultipleExceptions& m) {
      if (m.DeadPlaces() == 0) throw;
      std::printf("bfs: a place died: %s: the graph is lost (bfs is not resilient)\n", m.what());
      throw;
    }
  });
}
