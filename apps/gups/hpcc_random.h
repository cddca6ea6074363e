// HPCC RandomAccess's generator (gups.cc): its values and its jump ahead.
// Header-only, for the app and its unit test.
#pragma once

#include <cstdint>

namespace fox::apps::hpcc {

inline constexpr uint64_t kPoly = 0x7;
inline constexpr uint64_t kPeriod = 1317624576693539401ull;

// The generator's next value: a left shift, the polynomial folded in when
// the top bit falls out.
inline uint64_t Next(uint64_t x) { return (x << 1) ^ ((x >> 63) != 0 ? kPoly : 0); }

// The value after n steps from the start (1), in O(64^2 log n): over GF(2)
// a value is a polynomial in x, each step multiplies it by x modulo the
// generator's polynomial, and x^(2j) mod it for j < 64 are kept to square a
// value (square of sum = sum of squares over GF(2)), n's bits read from the top.
inline uint64_t Starts(int64_t n) {
  while (n < 0) n += int64_t(kPeriod);
  n = int64_t(uint64_t(n) % kPeriod);
  if (n == 0) return 1;
  uint64_t even[64];  // even[j] = x^(2j)
  uint64_t v = 1;
  for (int j = 0; j < 64; ++j) {
    even[j] = v;
    v = Next(Next(v));
  }
  int bit = 62;
  while (bit >= 0 && ((uint64_t(n) >> bit) & 1) == 0) --bit;
  uint64_t ran = 2;  // x: the top bit of n
  while (bit > 0) {
    uint64_t square = 0;
    for (int j = 0; j < 64; ++j) {
      if ((ran >> j) & 1) square ^= even[j];
    }
    ran = square;
    --bit;
    if ((uint64_t(n) >> bit) & 1) ran = Next(ran);
  }
  return ran;
}

}  // namespace fox::apps::hpcc
