// Graph500's validation of a BFS tree (the specification's five checks),
// for one part of a 1-D partition (local_graph.h): with the depth of every
// vertex of the graph at hand, each part checks its own vertices and every
// edge that touches them, so the parts together check every input edge.
//
//   1. the tree's root is its own parent, at depth 0;
//   2. a vertex has a parent exactly when it has a depth;
//   3. a reached vertex other than the root has a parent one level up,
//      and the graph has the edge between them (so the parents form a tree
//      whose depths are its levels);
//   4. every edge joins two reached or two unreached vertices (the tree
//      spans the root's component), and
//   5. the reached endpoints of an edge are at most one level apart (the
//      levels are the shortest distances).
//
// Header-only, for the app, its MPI peer and the unit tests.
#pragma once

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>

#include "local_graph.h"

namespace fox::apps::bfs {

struct Verdict {
  uint64_t errors = 0;
  std::string first;  // the first error found, as a sentence

  template <class... A>
  void Add(const char* format, A... args) {
    if (errors++ == 0) {
      char line[160];
      std::snprintf(line, sizeof line, format, args...);
      first = line;
    }
  }
};

// This part's share of the checks of the tree from `root`: parent and depth
// are the part's (local indices), depth_all every vertex's (global ids).
inline Verdict Validate(const LocalGraph& g, uint64_t n, uint64_t root, const int64_t* parent, const int32_t* depth,
                        const int32_t* depth_all) {
  Verdict verdict;
  for (uint64_t v = 0; v < g.count; ++v) {
    uint64_t x = g.begin + v;
    int64_t p = parent[v];
    int32_t d = depth[v];
    if (x == root && (p != int64_t(root) || d != 0)) {
      verdict.Add("root %" PRIu64 ": parent %" PRId64 " at depth %d, not itself at 0", x, p, int(d));
      continue;
    }
    if ((p == -1) != (d == -1) || depth_all[x] != d) {
      verdict.Add("vertex %" PRIu64 ": parent %" PRId64 " but depth %d", x, p, int(d));
      continue;
    }
    bool reached = p != -1;
    if (reached && x != root) {
      if (p < 0 || uint64_t(p) >= n || depth_all[p] != d - 1) {
        verdict.Add("vertex %" PRIu64 " at depth %d: parent %" PRId64 " is not one level up", x, int(d), p);
      } else {
        bool edge = false;
        const uint32_t* adj = g.Neighbours(v);
        for (uint64_t k = 0; k < g.Degree(v) && !edge; ++k) edge = adj[k] == uint64_t(p);
        if (!edge) verdict.Add("vertex %" PRIu64 ": no edge to its parent %" PRId64, x, p);
      }
    }
    const uint32_t* adj = g.Neighbours(v);
    for (uint64_t k = 0; k < g.Degree(v); ++k) {
      int32_t e = depth_all[adj[k]];
      if ((e != -1) != reached) {
        verdict.Add("edge %" PRIu64 "-%u: one end reached, the other not", x, unsigned(adj[k]));
      } else if (reached && (e > d + 1 || d > e + 1)) {
        verdict.Add("edge %" PRIu64 "-%u: ends at depths %d and %d", x, unsigned(adj[k]), int(d), int(e));
      }
    }
  }
  return verdict;
}

}  // namespace fox::apps::bfs
