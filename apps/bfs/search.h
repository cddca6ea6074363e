// One direction-optimizing breadth-first search over a 1-D partition
// (local_graph.h's steps), level by level, over a communicator: bfs.cc's
// (Team collectives between places), its MPI peer's (MPI's) and the unit
// tests' (threads) run this same loop, so they differ in how bytes move.
//
// A Comm provides, collectively (every part calls each, in the same order):
//   uint32_t Rank(), Parts()
//   std::vector<std::vector<uint32_t>> Alltoall(std::vector<std::vector<uint32_t>> out)
//   std::vector<uint64_t> Allgather(const std::vector<uint64_t>& mine)  // equal lengths, in part order
//   std::vector<uint64_t> Sum(const std::vector<uint64_t>& values)      // element-wise, at every part
//   double Max(double value)
//   void Barrier()
// and locally:
//   uint64_t Workers()                          // how many at once in Parallel
//   void Parallel(uint64_t count, F f)          // f(worker, lo, hi) over shares of [0, count)
//   uint64_t NowNs()
//
// Header-only, for the app, its MPI peer and the unit tests.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "kronecker.h"
#include "local_graph.h"
#include "validate.h"

namespace fox::apps::bfs {

inline constexpr uint64_t kRoundEdges = uint64_t(1) << 21;  // edges a part generates per exchange

// The part's rows: part p generates edges [pM/P, (p+1)M/P) and sends each
// to the owners of its two ends, an exchange per kRoundEdges edges.
template <class Comm>
LocalGraph Build(Comm& comm, const kronecker::Graph& kg, const Partition& part) {
  const uint32_t me = comm.Rank(), parts = comm.Parts();
  const uint64_t m = kg.edges(), first = m * me / parts, last = m * (me + 1) / parts;
  const uint64_t rounds = ((m + parts - 1) / parts + kRoundEdges - 1) / kRoundEdges;
  std::vector<std::vector<uint32_t>> kept;
  for (uint64_t r = 0; r < rounds; ++r) {
    uint64_t lo = std::min(last, first + r * kRoundEdges), hi = std::min(last, lo + kRoundEdges);
    std::vector<std::vector<std::vector<uint32_t>>> by_worker(comm.Workers(),
                                                              std::vector<std::vector<uint32_t>>(parts));
    comm.Parallel(hi - lo, [&](uint64_t k, uint64_t a, uint64_t b) {
      auto& out = by_worker[k];
      for (uint64_t e = lo + a; e < lo + b; ++e) {
        auto [u, v] = kg.Edge(e);
        out[part.Owner(u)].insert(out[part.Owner(u)].end(), {uint32_t(u), uint32_t(v)});
        out[part.Owner(v)].insert(out[part.Owner(v)].end(), {uint32_t(v), uint32_t(u)});
      }
    });
    std::vector<std::vector<uint32_t>> out(parts);
    for (auto& worker : by_worker) {
      for (uint32_t q = 0; q < parts; ++q) out[q].insert(out[q].end(), worker[q].begin(), worker[q].end());
    }
    for (auto& piece : comm.Alltoall(std::move(out))) kept.push_back(std::move(piece));
  }
  std::vector<const std::vector<uint32_t>*> pieces;
  for (const auto& piece : kept) pieces.push_back(&piece);
  return LocalGraph::Build(part.Begin(me), part.End(me) - part.Begin(me), pieces);
}

struct Search {
  uint64_t vertices = 0, edges = 0, depth_sum = 0;  // reached; input edges of the root's component
  int steps = 0, bottom_up = 0;                     // levels searched (the last finds nothing); bottom-up
  double seconds = 0;                               // from a barrier to the last part's end
};

// Searches from `root` (force: 0 by Beamer's heuristic, 1 top-down only, 2
// bottom-up only); fills parent and depth (the part's vertices).
// all_edges: the rows' length summed over the parts.
template <class Comm>
Search SearchFrom(Comm& comm, const LocalGraph& g, const Partition& part, uint64_t root, uint64_t all_edges,
                  std::vector<int64_t>* parent_v, std::vector<int32_t>* depth_v, int force = 0) {
  const uint32_t me = comm.Rank(), parts = comm.Parts();
  std::fill(parent_v->begin(), parent_v->end(), -1);
  std::fill(depth_v->begin(), depth_v->end(), -1);
  int64_t* parent = parent_v->data();
  int32_t* depth = depth_v->data();
  const uint64_t workers = comm.Workers();
  std::vector<uint64_t> frontier, next, bits;
  std::vector<std::vector<uint64_t>> next_k(workers);
  std::vector<std::vector<std::vector<uint32_t>>> out_k(workers, std::vector<std::vector<uint32_t>>(parts));
  Search s;
  comm.Barrier();
  const uint64_t t0 = comm.NowNs();
  uint64_t root_degree = 0;
  if (part.Owner(root) == me) {
    parent[root - g.begin] = int64_t(root);
    depth[root - g.begin] = 0;
    frontier.push_back(root - g.begin);
    root_degree = g.Degree(root - g.begin);
  }
  uint64_t n_f = 1, m_f = comm.Sum({root_degree})[0], m_u = all_edges - std::min(all_edges, m_f), previous = 0;
  Direction direction;
  for (int32_t level = 0; n_f > 0; ++level) {
    direction.Choose(n_f, m_f, m_u, part.n, previous);
    if (force != 0) direction.bottom_up = force == 2;
    for (auto& n : next_k) n.clear();
    next.clear();
    if (!direction.bottom_up) {
      for (auto& out : out_k) {
        for (auto& o : out) o.clear();
      }
      comm.Parallel(frontier.size(), [&](uint64_t k, uint64_t lo, uint64_t hi) {
        TopDown(g, part, me, frontier.data() + lo, hi - lo, parent, depth, level, &next_k[k], &out_k[k]);
      });
      std::vector<std::vector<uint32_t>> out(parts);
      for (auto& worker : out_k) {
        for (uint32_t q = 0; q < parts; ++q) out[q].insert(out[q].end(), worker[q].begin(), worker[q].end());
      }
      for (const auto& pairs : comm.Alltoall(std::move(out))) Receive(g, pairs, parent, depth, level, &next);
    } else {
      ++s.bottom_up;
      FrontierBits(frontier, part.Words(), &bits);
      std::vector<uint64_t> all = comm.Allgather(bits);
      comm.Parallel(g.count, [&](uint64_t k, uint64_t lo, uint64_t hi) {
        BottomUp(g, lo, hi, all.data(), parent, depth, level, &next_k[k]);
      });
    }
    for (auto& n : next_k) next.insert(next.end(), n.begin(), n.end());
    uint64_t next_edges = 0;
    for (uint64_t v : next) next_edges += g.Degree(v);
    auto sums = comm.Sum({uint64_t(next.size()), next_edges});
    previous = n_f;
    n_f = sums[0];
    m_f = sums[1];
    m_u -= std::min(m_u, m_f);
    frontier.swap(next);
    s.steps = level + 1;
  }
  s.seconds = comm.Max(double(comm.NowNs() - t0) / 1e9);
  uint64_t reached = 0, degrees = 0, depths = 0;
  for (uint64_t v = 0; v < g.count; ++v) {
    if (parent[v] == -1) continue;
    ++reached;
    degrees += g.Degree(v);
    depths += uint64_t(depth[v]);
  }
  auto sums = comm.Sum({reached, degrees, depths});
  s.vertices = sums[0];
  s.edges = sums[1] / 2;
  s.depth_sum = sums[2];
  return s;
}

// `count` roots drawn from `seed` among the vertices with an edge, the same
// at every part (candidates proposed 64 at a time, their degrees summed
// over the parts).
template <class Comm>
std::vector<uint64_t> Roots(Comm& comm, const LocalGraph& g, const Partition& part, uint64_t count, uint64_t seed) {
  std::vector<uint64_t> roots;
  for (uint64_t batch = 0; roots.size() < count && batch < 64 * count; ++batch) {
    std::vector<uint64_t> candidates, degrees;
    for (uint64_t i = 0; i < 64; ++i) {
      uint64_t c = kronecker::Mix(seed * 0x9e3779b97f4a7c15ull + batch * 64 + i) % part.n;
      candidates.push_back(c);
      degrees.push_back(part.Owner(c) == comm.Rank() ? g.Degree(c - g.begin) : 0);
    }
    degrees = comm.Sum(degrees);
    for (uint64_t i = 0; i < 64 && roots.size() < count; ++i) {
      if (degrees[i] > 0 && std::find(roots.begin(), roots.end(), candidates[i]) == roots.end()) {
        roots.push_back(candidates[i]);
      }
    }
  }
  return roots;
}

// The tree's validation (validate.h) at every part, with every vertex's
// depth gathered: the errors over all parts and this part's first.
template <class Comm>
Verdict Check(Comm& comm, const LocalGraph& g, const Partition& part, uint64_t root, const std::vector<int64_t>& parent,
              const std::vector<int32_t>& depth) {
  std::vector<uint64_t> mine(part.block / 2, ~uint64_t(0));  // two depths a word, -1 past the part's end
  for (uint64_t v = 0; v < g.count; ++v) {
    uint64_t shift = 32 * (v % 2);
    mine[v / 2] = (mine[v / 2] & ~(uint64_t(0xffffffff) << shift)) | (uint64_t(uint32_t(depth[v])) << shift);
  }
  std::vector<uint64_t> words = comm.Allgather(mine);
  std::vector<int32_t> all(words.size() * 2);
  for (size_t i = 0; i < all.size(); ++i) all[i] = int32_t(uint32_t(words[i / 2] >> (32 * (i % 2))));
  Verdict v = Validate(g, part.n, root, parent.data(), depth.data(), all.data());
  v.errors = comm.Sum({v.errors})[0];
  return v;
}

// Graph500's kernels as bfs prints them (its MPI peer too, as PROGRAM):
// the graph built (its line says it is `over` the parts), `roots` roots
// drawn, a line per search (vertices and edges reached, steps, depth sum,
// time, MTEPS, the validation's verdict when `check`; a part that finds an
// error prints the first), then Graph500's summary. Part 0 prints; returns
// the number of invalid trees, the same at every part.
struct Graph500Run {
  uint64_t scale = 16, edgefactor = 16, roots = 8, seed = 1;
  bool check = true;
};
inline std::string Summary(const std::vector<double>& mteps);
template <class Comm>
uint64_t Graph500(Comm& comm, const char* program, const Graph500Run& c, const std::string& over) {
  const bool zero = comm.Rank() == 0;
  const kronecker::Graph kg(uint32_t(c.scale), c.edgefactor, c.seed);
  const Partition part(kg.vertices(), comm.Parts());
  uint64_t t0 = comm.NowNs();
  const LocalGraph g = Build(comm, kg, part);
  uint64_t all_edges = comm.Sum({uint64_t(g.adj.size())})[0];
  double built = comm.Max(double(comm.NowNs() - t0) / 1e9);
  if (zero) {
    std::printf(
        "%s: graph500 kronecker graph, scale %llu, edgefactor %llu: %llu vertices, %llu edges over %s, built "
        "in %.3f s\n",
        program, (unsigned long long)c.scale, (unsigned long long)c.edgefactor, (unsigned long long)kg.vertices(),
        (unsigned long long)kg.edges(), over.c_str(), built);
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
      if (!v.first.empty()) {
        std::printf("%s: root %llu: an error here: %s\n", program, (unsigned long long)root, v.first.c_str());
      }
      invalid += v.errors > 0;
      verdict = v.errors == 0 ? "valid" : "INVALID (" + std::to_string(v.errors) + " errors)";
    }
    mteps.push_back(double(s.edges) / s.seconds / 1e6);
    if (zero) {
      std::printf(
          "%s: root %llu: %llu vertices and %llu edges reached in %d steps (%d bottom-up), depth sum %llu, "
          "%.6f s, %.3f MTEPS: %s\n",
          program, (unsigned long long)root, (unsigned long long)s.vertices, (unsigned long long)s.edges, s.steps,
          s.bottom_up, (unsigned long long)s.depth_sum, s.seconds, mteps.back(), verdict.c_str());
    }
  }
  if (zero) {
    std::printf("%s: %s: %s\n", program, Summary(mteps).c_str(),
                !c.check       ? "not validated"
                : invalid == 0 ? "every tree valid"
                               : "SOME TREES INVALID");
  }
  return invalid;
}

// Graph500's summary of the searches' MTEPS: their harmonic mean, with
// min, median and max.
inline std::string Summary(const std::vector<double>& mteps) {
  if (mteps.empty()) return "no roots";
  double inverse = 0;
  for (double t : mteps) inverse += 1 / t;
  std::vector<double> sorted = mteps;
  std::sort(sorted.begin(), sorted.end());
  char line[200];
  std::snprintf(line, sizeof line, "%zu roots: harmonic mean %.3f MTEPS (min %.3f, median %.3f, max %.3f)",
                mteps.size(), double(mteps.size()) / inverse, sorted.front(), sorted[sorted.size() / 2], sorted.back());
  return line;
}

}  // namespace fox::apps::bfs
