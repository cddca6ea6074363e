// CubeRoot (cube_root.h): reduce to m in [1, 8) by a power of two whose
// exponent is a multiple of three, guess with a polynomial (1e-5), refine
// with one Halley step (cubic convergence: about 1e-15), and finish with
// one Newton step whose residual y^3 - m is computed exactly in
// double-double arithmetic (Dekker's product), so that y + (correction)
// lands within about 2^-90 of the true root before its one final rounding.
// Two divisions in all: it runs in about twice glibc's cbrt's time.
#include "cube_root.h"

#include <bit>
#include <cstdint>

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace lulesh {
namespace {

constexpr uint64_t kSignBit = uint64_t{1} << 63;
constexpr uint64_t kMantissa = (uint64_t{1} << 52) - 1;
constexpr int kBias = 1023;

// a * b == product + error exactly (Dekker, without fused multiply-add;
// |a|, |b| < 2^996 here).
void TwoProduct(double a, double b, double* product, double* error) {
  constexpr double kSplit = 134217729.0;  // 2^27 + 1
  double ta = kSplit * a, tb = kSplit * b;
  double a_hi = ta - (ta - a), a_lo = a - a_hi;
  double b_hi = tb - (tb - b), b_lo = b - b_hi;
  *product = a * b;
  *error = ((a_hi * b_hi - *product) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo;
}

// The double 2^k for k in the normal range.
double PowerOfTwo(int k) { return std::bit_cast<double>(uint64_t(k + kBias) << 52); }

}  // namespace

double CubeRoot(double x) {
  uint64_t bits = std::bit_cast<uint64_t>(x);
  const bool negative = (bits & kSignBit) != 0;
  bits &= ~kSignBit;
  int biased = int(bits >> 52);
  if (biased == 0x7ff || bits == 0) return x;  // NaN, infinity, zero
  int exponent = 0;
  if (biased == 0) {  // subnormal: scale into the normal range first
    bits = std::bit_cast<uint64_t>(std::bit_cast<double>(bits) * 0x1p54);
    biased = int(bits >> 52);
    exponent = -54;
  }
  exponent += biased - kBias;  // |x| = 1.f * 2^exponent
  int third = exponent >= 0 ? exponent / 3 : -((2 - exponent) / 3);
  int rest = exponent - 3 * third;                                                              // 0, 1 or 2
  const double mantissa = std::bit_cast<double>((bits & kMantissa) | (uint64_t(kBias) << 52));  // [1, 2)
  const double m = mantissa * double(1 << rest);                                                // [1, 8), exact

  // Guess: cbrt on [1, 2) by a degree-4 polynomial (relative error 1.1e-5),
  // times a rounded cbrt(2^rest); then one Halley step (error ~1e-15).
  static constexpr double kGuess[5] = {0.5077694374995796, 0.7159085634367843, -0.2982667710727416, 0.08502449361636355,
                                       -0.010425277305825681};
  static constexpr double kCubeRootOf2[3] = {1.0, 1.2599210498948732, 1.5874010519681994};
  double y = kGuess[4];
  for (int i = 3; i >= 0; --i) y = y * mantissa + kGuess[i];
  y *= kCubeRootOf2[rest];
  const double y3 = y * y * y;
  y = y * (y3 + 2.0 * m) / (2.0 * y3 + m);
  double square, square_error, cube, cube_error, tail, tail_error;
  TwoProduct(y, y, &square, &square_error);
  TwoProduct(square, y, &cube, &cube_error);
  TwoProduct(square_error, y, &tail, &tail_error);
  double residual = (((cube - m) + cube_error) + tail) + tail_error;  // cube - m is exact (Sterbenz)
  y = y - residual / (3.0 * square);

  double root = y * PowerOfTwo(third);
  return negative ? -root : root;
}

}  // namespace lulesh
