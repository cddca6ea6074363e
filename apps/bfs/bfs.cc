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
#include "fox/apgas/team.h"
#include "fox/clock.h"
#include "search.h"

namespace {

using fox::apgas::Place;
using fox::apgas::Team;
using namespace fox::apps::bfs;
using fox::apps::kronecker::Graph;

struct Config {
  uint64_t scale = 16, edgefactor = 16, roots = 8, seed = 1;
  bool check = true;
};

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
  // smaller than 1024 unless there is only one).
  template <class F>
  void Parallel(uint64_t count, const F& f) {
    uint64_t n = std::max<uint64_t>(1, std::min(Workers(), count / 1024 + 1));
    fox::apgas::finish([&] {
      for (uint64_t k = 1; k < n; ++k) {
        fox::apgas::async([&f, k, count, n] { f(k, count * k / n, count * (k + 1) / n); });
      }
      f(0, 0, count / n);
    });
  }
  uint64_t NowNs() const { return fox::clock::NowNs(); }

 private:
  Team team_;
};

void Member(Config c, std::vector<Place> group) {
  TeamComm comm(group);
  const bool zero = comm.Rank() == 0;
  const Graph kg(uint32_t(c.scale), c.edgefactor, c.seed);
  const Partition part(kg.vertices(), comm.Parts());
  uint64_t t0 = comm.NowNs();
  const LocalGraph g = Build(comm, kg, part);
  uint64_t all_edges = comm.Sum({uint64_t(g.adj.size())})[0];
  double built = comm.Max(double(comm.NowNs() - t0) / 1e9);
  if (zero) {
    std::printf("bfs: graph500 kronecker graph, scale %" PRIu64 ", edgefactor %" PRIu64 ": %" PRIu64
                " vertices, %" PRIu64 " edges over %zu places (%d activity core%s a place), built in %.3f s\n",
                c.scale, c.edgefactor, kg.vertices(), kg.edges(), group.size(), fox::apgas::activityCores(),
                fox::apgas::activityCores() == 1 ? "" : "s", built);
  }
  std::vector<uint64_t> roots = Roots(comm, g, part, c.roots, c.seed);
  std::vector<int64_t> parent(g.count);
  std::vector<int32_t> depth(g.count);
  std::vector<double> mteps;
  uint64_t invalid = 0;
  for (uint64_t root : roots) {
    Search s = SearchFrom(comm, g, part, root, all_edges, &parent, &depth);
    std::string verdict = "not validated";
    if (c.check) {
      Verdict v = Check(comm, g, part, root, parent, depth);
      if (!v.first.empty()) std::printf("bfs: root %" PRIu64 ": an error here: %s\n", root, v.first.c_str());
      invalid += v.errors > 0;
      verdict = v.errors == 0 ? "valid" : "INVALID (" + std::to_string(v.errors) + " errors)";
    }
    mteps.push_back(double(s.edges) / s.seconds / 1e6);
    if (zero) {
      std::printf("bfs: root %" PRIu64 ": %" PRIu64 " vertices and %" PRIu64
                  " edges reached in %d steps (%d bottom-up), depth sum %" PRIu64 ", %.6f s, %.3f MTEPS: %s\n",
                  root, s.vertices, s.edges, s.steps, s.bottom_up, s.depth_sum, s.seconds, mteps.back(),
                  verdict.c_str());
    }
  }
  if (!zero) return;
  std::printf("bfs: %s: %s\n", Summary(mteps).c_str(),
              !c.check       ? "not validated"
              : invalid == 0 ? "every tree valid"
                             : "SOME TREES INVALID");
  if (invalid > 0) throw std::runtime_error("bfs: " + std::to_string(invalid) + " invalid trees");
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
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
              p, [](Config cfg, std::vector<Place> g) { Member(cfg, g); }, c, live);
      });
    } catch (const fox::apgas::MultipleExceptions& m) {
      if (m.DeadPlaces() == 0) throw;
      std::printf("bfs: a place died: %s: the graph is lost (bfs is not resilient)\n", m.what());
      throw;
    }
  });
}
