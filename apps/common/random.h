// The iterative apps' generators and exact partials: every input row is drawn from its own
// seed (the app's seed and the row's index), by integer arithmetic and
// exact conversions only, so that nodes and Linux draw the same bits.
#pragma once

#include <cstdint>
#include <vector>

namespace fox::apps {

// SplitMix64 (Steele, Lea, Flood): the next value of `state`.
inline uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The state for row `i` of the input drawn from `seed`.
inline uint64_t RowSeed(uint64_t seed, uint64_t i) {
  return seed * 0x9E3779B97F4A7C15ull ^ (i + 1) * 0xD1B54A32D192ED03ull;
}

inline constexpr double kQuantum = 1.0 / (1 << 20);

// A multiple of 2^-20 in [lo, hi), from one draw.
inline double Draw(uint64_t* state, double lo, double hi) {
  return lo + double(SplitMix64(state) % uint64_t((hi - lo) / kQuantum)) * kQuantum;
}

// Uniform in [0, 1) in steps of 2^-53.
inline double Unit(uint64_t* state) { return double(SplitMix64(state) >> 11) * (1.0 / 9007199254740992.0); }

// Integer sums per element and one more, added exactly in any order: the
// partial of apps whose terms are fixed point (linreg, pagerank).
struct Sums {
  std::vector<int64_t> each;
  int64_t extra = 0;
  template <class A>
  void serialize(A& ar) {
    ar(each, extra);
  }
  // As one array of width + 1 (each, zeros to `width` if empty, then
  // extra), for Team's array allreduce; Unflat undoes it.
  std::vector<int64_t> Flat(size_t width) && {
    if (each.empty()) each.assign(width, 0);
    each.push_back(extra);
    return std::move(each);
  }
  static Sums Unflat(std::vector<int64_t> flat) {
    Sums s;
    if (flat.empty()) return s;
    s.extra = flat.back();
    flat.pop_back();
    s.each = std::move(flat);
    return s;
  }
  Sums& operator+=(const Sums& o) {
    if (each.empty()) return *this = o;
    for (size_t i = 0; i < each.size() && i < o.each.size(); ++i) each[i] += o.each[i];
    extra += o.extra;
    return *this;
  }
};

}  // namespace fox::apps
