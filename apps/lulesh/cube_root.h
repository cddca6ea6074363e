// A cube root that gives the same bits on every place.
//
// The hourglass force divides by the cube root of each element's volume,
// every step. std::cbrt comes from the C library, and fox's places do not
// share one: native images link musl's, hosted programs glibc's, and the
// two round differently (glibc's is off by up to a few units in the last
// place). A subdomain must compute alike wherever it runs, so the physics
// uses this function instead: only IEEE-754 additions, multiplications and
// divisions of doubles (compiled without fused multiply-adds), which every
// x86-64 place rounds alike.
#pragma once

namespace lulesh {

// The cube root of x, correctly rounded to nearest except, possibly, when
// the exact root lies within 2^-90 (relative) of the midpoint between two
// doubles; the same bits on every place in every case. CubeRoot(-x) ==
// -CubeRoot(x); zeros, infinities and NaNs are returned as they are. Pure
// and allocation-free; safe from any context.
double CubeRoot(double x);

}  // namespace lulesh
