#include "random.h"

#include <cstring>

#include "cpu.h"

namespace fox::random {
namespace {
uint64_t g_state = 0;

bool HasRdrand() {
  static int has = -1;
  if (has < 0) has = (x86::Cpuid(1).ecx >> 30) & 1;
  return has;
}

uint64_t Mix(uint64_t z) {  // splitmix64 finaliser
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
}  // namespace

uint64_t Next() {
  if (HasRdrand()) {
    for (int i = 0; i < 10; ++i) {
      uint64_t v;
      unsigned char ok;
      asm volatile("rdrand %0; setc %1" : "=r"(v), "=qm"(ok));
      if (ok) return v;
    }
  }
  g_state += 0x9e3779b97f4a7c15ull + x86::Rdtsc();
  return Mix(g_state);
}

void Fill(void* dst, size_t n) {
  auto* p = static_cast<uint8_t*>(dst);
  while (n > 0) {
    uint64_t v = Next();
    size_t k = n < 8 ? n : 8;
    std::memcpy(p, &v, k);
    p += k;
    n -= k;
  }
}

}  // namespace fox::random
