// Graph500's Kronecker graph (the specification's generator, kronecker_
// generator.m of its reference code), edge by edge: bfs.cc and its MPI peer
// (tests/bench/mpi/bfs_mpi.cc) each generate their share of one graph.
//
//   fox::apps::kronecker::Graph g(/*scale=*/16, /*edgefactor=*/16, /*seed=*/1);
//   for (uint64_t e = first; e < last; ++e) { auto [u, v] = g.Edge(e); ... }
//
// N = 2^scale vertices, M = edgefactor * N undirected edges. Edge e picks,
// for each of the scale bits of its endpoints, a quadrant of the adjacency
// matrix with the initiator probabilities A = 0.57, B = 0.19, C = 0.19,
// D = 0.05 (two uniform draws a bit, as the reference code draws them);
// the vertex labels are then permuted, so that the heavy vertices (few one
// bits) land anywhere. Self loops and repeated edges stay, as in the
// specification's edge list. The draws are a counter-based stream (SplitMix64
// over the seed and the edge's index) and the permutation a bijection on
// scale bits (odd multipliers and xorshifts), so that any edge can be
// generated alone, by any process, with the same result: the reference
// code's random generator and permutation are not reproduced, the
// distribution is.
//
// Header-only, for the app, its MPI peer and the unit tests.
#pragma once

#include <cstdint>
#include <utility>

namespace fox::apps::kronecker {

inline constexpr double kA = 0.57, kB = 0.19, kC = 0.19;

// SplitMix64's output function.
inline uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
inline constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;

class Graph {
 public:
  // scale in [1, 31] (vertex ids fit 32 bits), edgefactor >= 1.
  Graph(uint32_t scale, uint64_t edgefactor, uint64_t seed)
      : scale_(scale), edgefactor_(edgefactor), seed_(Mix(seed + kGolden)), mask_((uint64_t(1) << scale) - 1) {
    for (int k = 0; k < 3; ++k) keys_[k] = Mix(seed_ + uint64_t(k + 1) * kGolden);
  }
  uint32_t scale() const { return scale_; }
  uint64_t edgefactor() const { return edgefactor_; }
  uint64_t vertices() const { return mask_ + 1; }
  uint64_t edges() const { return edgefactor_ << scale_; }

  // Edge e (< edges()): its endpoints, permuted.
  std::pair<uint64_t, uint64_t> Edge(uint64_t e) const {
    constexpr double ab = kA + kB, c_norm = kC / (1 - ab), a_norm = kA / ab;
    uint64_t state = Mix(seed_ ^ (e * kGolden)), u = 0, v = 0;
    for (uint32_t bit = 0; bit < scale_; ++bit) {
      bool row = Uniform(&state) > ab;
      bool col = Uniform(&state) > (row ? c_norm : a_norm);
      u |= uint64_t(row) << bit;
      v |= uint64_t(col) << bit;
    }
    return {Permute(u), Permute(v)};
  }

  // The vertex labels' permutation: a bijection on [0, 2^scale).
  uint64_t Permute(uint64_t x) const {
    const uint32_t shift = (scale_ + 1) / 2;
    x = (x * 0x9e3779b97f4a7c15ull + keys_[0]) & mask_;
    x ^= x >> shift;
    x = (x * 0xbf58476d1ce4e5b9ull + keys_[1]) & mask_;
    x ^= x >> shift;
    x = (x * 0x94d049bb133111ebull + keys_[2]) & mask_;
    return x ^ (x >> shift);
  }

 private:
  // The stream's next value in [0, 1).
  static double Uniform(uint64_t* state) {
    *state += kGolden;
    return double(Mix(*state) >> 11) * 0x1.0p-53;
  }

  uint32_t scale_;
  uint64_t edgefactor_, seed_, mask_;
  uint64_t keys_[3];
};

}  // namespace fox::apps::kronecker
