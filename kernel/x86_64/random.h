// Random bytes for the C library (getrandom, arc4random) and AT_RANDOM.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fox::random {

// RDRAND (RDSEED-quality is not promised) when the CPU has it, else a
// TSC-seeded mixer — good for hash seeds and stack canaries, not for keys.
void Fill(void* dst, size_t n);
uint64_t Next();

}  // namespace fox::random
