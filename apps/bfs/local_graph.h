// One process's share of a distributed graph and the two steps of a
// direction-optimizing breadth-first search over it (Beamer, Asanović and
// Patterson, SC'12), without the communication: bfs.cc moves what they
// produce with Team collectives, its MPI peer (tests/bench/mpi/bfs_mpi.cc)
// with MPI's, so that the two differ in the runtime only.
//
// The vertices are dealt in blocks (a 1-D partition): part p owns
// [p * block, (p + 1) * block), block a multiple of 64 so that a part's
// slice of a frontier bitmap is whole words. A part keeps, for each of its
// vertices, every edge that touches it (an undirected edge (u, v) is kept
// as u -> v at u's owner and v -> u at v's owner; a self loop twice), in
// compressed rows: the degree sum over the vertices a search reached is
// then twice the input edges it traversed, as Graph500 counts them.
//
// parent[] (int64, -1: not reached) and depth[] (int32, -1) are the part's
// vertices', indexed locally. The steps claim a vertex by a compare-and-swap
// on its parent, so slices of one step may run on several cores at once.
//
// Header-only, for the app, its MPI peer and the unit tests.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace fox::apps::bfs {

struct Partition {
  uint64_t n = 0;      // vertices
  uint32_t parts = 1;  // processes
  uint64_t block = 64;

  Partition() = default;
  Partition(uint64_t vertices, uint32_t count) : n(vertices), parts(count) {
    uint64_t per = (vertices + count - 1) / count;
    block = std::max<uint64_t>(64, (per + 63) / 64 * 64);
  }
  uint32_t Owner(uint64_t v) const { return uint32_t(v / block); }
  uint64_t Begin(uint32_t p) const { return std::min(n, uint64_t(p) * block); }
  uint64_t End(uint32_t p) const { return std::min(n, uint64_t(p + 1) * block); }
  uint64_t Words() const { return block / 64; }  // a part's slice of a bitmap
};

struct LocalGraph {
  uint64_t begin = 0, count = 0;  // the part's vertices: [begin, begin + count)
  std::vector<uint64_t> offsets;  // count + 1
  std::vector<uint32_t> adj;      // global ids

  uint64_t Degree(uint64_t local) const { return offsets[local + 1] - offsets[local]; }
  const uint32_t* Neighbours(uint64_t local) const { return adj.data() + offsets[local]; }

  // From directed pairs (u, v), u one of the part's vertices, flattened
  // (u0, v0, u1, v1, ...): a counting sort by u. Each piece of `pieces` is
  // one source's pairs (the order within a row is theirs, pieces in order).
  static LocalGraph Build(uint64_t begin, uint64_t count, const std::vector<const std::vector<uint32_t>*>& pieces) {
    LocalGraph g;
    g.begin = begin;
    g.count = count;
    g.offsets.assign(count + 1, 0);
    for (const auto* piece : pieces) {
      for (size_t i = 0; i + 1 < piece->size(); i += 2) ++g.offsets[(*piece)[i] - begin + 1];
    }
    for (uint64_t v = 0; v < count; ++v) g.offsets[v + 1] += g.offsets[v];
    g.adj.resize(g.offsets[count]);
    std::vector<uint64_t> next(g.offsets.begin(), g.offsets.end() - 1);
    for (const auto* piece : pieces) {
      for (size_t i = 0; i + 1 < piece->size(); i += 2) g.adj[next[(*piece)[i] - begin]++] = (*piece)[i + 1];
    }
    return g;
  }
};

inline bool Claim(int64_t* parent, uint64_t local, int64_t by) {
  int64_t expected = -1;
  return __atomic_compare_exchange_n(&parent[local], &expected, by, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

// Top-down, for frontier[0..count) (local indices) at depth `level`: a
// neighbour of this part not reached yet is claimed (depth level + 1,
// appended to next); a neighbour of part q is appended to out[q] as
// (vertex, parent) for q to claim (Receive).
inline void TopDown(const LocalGraph& g, const Partition& part, uint32_t me, const uint64_t* frontier, size_t count,
                    int64_t* parent, int32_t* depth, int32_t level, std::vector<uint64_t>* next,
                    std::vector<std::vector<uint32_t>>* out) {
  for (size_t i = 0; i < count; ++i) {
    uint64_t u = frontier[i];
    uint32_t from = uint32_t(g.begin + u);
    const uint32_t* adj = g.Neighbours(u);
    for (uint64_t k = 0, d = g.Degree(u); k < d; ++k) {
      uint32_t v = adj[k];
      uint32_t owner = part.Owner(v);
      if (owner == me) {
        uint64_t local = v - g.begin;
        if (__atomic_load_n(&parent[local], __ATOMIC_RELAXED) == -1 && Claim(parent, local, from)) {
          depth[local] = level + 1;
          next->push_back(local);
        }
      } else {
        (*out)[owner].push_back(v);
        (*out)[owner].push_back(from);
      }
    }
  }
}

// The (vertex, parent) pairs another part sent this one (TopDown's out).
inline void Receive(const LocalGraph& g, const std::vector<uint32_t>& pairs, int64_t* parent, int32_t* depth,
                    int32_t level, std::vector<uint64_t>* next) {
  for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
    uint64_t local = pairs[i] - g.begin;
    if (parent[local] == -1) {
      parent[local] = pairs[i + 1];
      depth[local] = level + 1;
      next->push_back(local);
    }
  }
}

// Bottom-up, for the part's vertices [lo, hi) (local indices): each one not
// reached yet takes as parent its first neighbour in the frontier (bits:
// the whole frontier's bitmap, every part's slice in part order).
inline void BottomUp(const LocalGraph& g, uint64_t lo, uint64_t hi, const uint64_t* bits, int64_t* parent,
                     int32_t* depth, int32_t level, std::vector<uint64_t>* next) {
  for (uint64_t v = lo; v < hi; ++v) {
    if (parent[v] != -1) continue;
    const uint32_t* adj = g.Neighbours(v);
    for (uint64_t k = 0, d = g.Degree(v); k < d; ++k) {
      uint32_t u = adj[k];
      if ((bits[u / 64] >> (u % 64)) & 1) {
        parent[v] = u;
        depth[v] = level + 1;
        next->push_back(v);
        break;
      }
    }
  }
}

// The frontier's bitmap slice of this part (Partition::Words words).
inline void FrontierBits(const std::vector<uint64_t>& frontier, uint64_t words, std::vector<uint64_t>* bits) {
  bits->assign(words, 0);
  for (uint64_t v : frontier) (*bits)[v / 64] |= uint64_t(1) << (v % 64);
}

// Beamer's heuristic: bottom-up once the frontier's edges exceed the
// unexplored edges / alpha, top-down again once the frontier has fewer
// than n / beta vertices and shrinks.
struct Direction {
  static constexpr uint64_t kAlpha = 14, kBeta = 24;
  bool bottom_up = false;
  void Choose(uint64_t frontier_vertices, uint64_t frontier_edges, uint64_t unexplored_edges, uint64_t n,
              uint64_t previous_vertices) {
    if (!bottom_up) {
      bottom_up = frontier_edges > unexplored_edges / kAlpha;
    } else if (frontier_vertices < n / kBeta && frontier_vertices < previous_vertices) {
      bottom_up = false;
    }
  }
};

}  // namespace fox::apps::bfs
