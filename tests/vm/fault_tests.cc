// Faults a user must see reported clearly: null dereference, stack overflow,
// std::terminate, plus the banner and the allocators.
#include <cstdint>
#include <cstring>
#include <new>
#include <random>
#include <stdexcept>
#include <vector>

#include "vmtest.h"

namespace vmtest {

int Banner(int, char**) { return 0; }

[[gnu::noinline]] int ReadThroughNull(volatile int* p) { return *p; }

int NullDeref(int, char**) {
  volatile int* p = nullptr;
  std::printf("dereferencing null\n");
  return ReadThroughNull(p);
}

volatile int g_limit = 1 << 30;  // never reached: the guard page stops us first

[[gnu::noinline]] int Recurse(int depth) {
  volatile char frame[512];
  frame[0] = char(depth);
  if (depth > g_limit) return 0;
  return Recurse(depth + 1) + frame[0];
}

int StackOverflow(int, char**) { return Recurse(0); }

[[gnu::noinline]] void ThrowUncaught() { throw std::runtime_error("nobody catches this"); }

int Terminate(int, char**) {
  ThrowUncaught();
  return 0;
}

// Random-size allocations and frees with every byte checked: a slot table
// of live blocks, each filled with a pattern derived from its address and
// size (word by word, then the tail), verified when freed.
namespace {
struct Slot {
  uint8_t* p;
  size_t n;
};

uint64_t Pattern(const Slot& s, size_t word) {
  uint64_t x = (reinterpret_cast<uintptr_t>(s.p) ^ (s.n << 40)) + word * 0x9E3779B97F4A7C15ull;
  return x ^ (x >> 29);
}

void Fill(const Slot& s) {
  size_t words = s.n / 8;
  auto* w = reinterpret_cast<uint64_t*>(s.p);
  for (size_t i = 0; i < words; ++i) w[i] = Pattern(s, i);
  for (size_t i = words * 8; i < s.n; ++i) s.p[i] = uint8_t(Pattern(s, i));
}

void VerifyAndFree(Slot& s) {
  size_t words = s.n / 8;
  auto* w = reinterpret_cast<const uint64_t*>(s.p);
  for (size_t i = 0; i < words; ++i) CHECK(w[i] == Pattern(s, i));
  for (size_t i = words * 8; i < s.n; ++i) CHECK(s.p[i] == uint8_t(Pattern(s, i)));
  std::free(s.p);
  s = Slot{nullptr, 0};
}
}  // namespace

int AllocStress(int argc, char** argv) {
  long ops = argc > 1 ? std::atol(argv[1]) : 2000000;
  constexpr int kSlots = 4096;
  std::vector<Slot> slots(kSlots, Slot{nullptr, 0});
  std::mt19937_64 rng(12345);
  size_t live_bytes = 0, peak = 0;
  long allocations = 0;
  for (long op = 0; op < ops; ++op) {
    Slot& s = slots[rng() % kSlots];
    if (s.p != nullptr) {
      live_bytes -= s.n;
      VerifyAndFree(s);
      continue;
    }
    uint64_t r = rng();
    unsigned bucket = r % 1000;  // 90% up to 256 B, 9.9% up to 16 KiB, 0.1% up to 1 MiB
    size_t n = 1 + (r >> 10) % (bucket < 900 ? 256 : bucket < 999 ? 16384 : 1 << 20);
    size_t align = (r >> 40) % 16 == 0 ? size_t(64) << ((r >> 44) % 7) : 0;
    s.p = static_cast<uint8_t*>(align ? std::aligned_alloc(align, (n + align - 1) / align * align) : std::malloc(n));
    CHECK(s.p != nullptr);
    if (align) CHECK(reinterpret_cast<uintptr_t>(s.p) % align == 0);
    s.n = n;
    Fill(s);
    ++allocations;
    live_bytes += n;
    if (live_bytes > peak) peak = live_bytes;
  }
  for (Slot& s : slots) {
    if (s.p != nullptr) VerifyAndFree(s);
  }
  // realloc keeps contents across growth and shrinking.
  char* p = static_cast<char*>(std::malloc(10));
  std::memcpy(p, "0123456789", 10);
  p = static_cast<char*>(std::realloc(p, 100000));
  CHECK(p != nullptr && std::memcmp(p, "0123456789", 10) == 0);
  p = static_cast<char*>(std::realloc(p, 5));
  CHECK(p != nullptr && std::memcmp(p, "01234", 5) == 0);
  std::free(p);
  std::printf("alloc_stress: %ld operations (%ld allocations), peak %zu live bytes, all contents verified\n", ops,
              allocations, peak);
  return 0;
}

int AllocOom(int, char**) {
  // Larger than the node's memory: malloc fails cleanly, new throws.
  // volatile: the compiler may otherwise elide an allocation whose result is
  // only compared with null, and fold the comparison.
  void* volatile huge = std::malloc(size_t(64) << 30);
  CHECK(huge == nullptr);
  bool threw = false;
  try {
    char* volatile big = new char[size_t(64) << 30];
    delete[] big;
  } catch (const std::bad_alloc&) {
    threw = true;
  }
  CHECK(threw);
  // Exhaust memory with 1 MiB blocks, then give it all back and do it again.
  std::vector<void*> blocks;
  blocks.reserve(1 << 16);
  for (;;) {
    void* b = std::malloc(1 << 20);
    if (b == nullptr) break;
    std::memset(b, 0xAB, 1 << 20);
    blocks.push_back(b);
  }
  size_t first = blocks.size();
  for (void* b : blocks) std::free(b);
  blocks.clear();
  for (size_t i = 0; i < first; ++i) {
    void* b = std::malloc(1 << 20);
    CHECK(b != nullptr);
    blocks.push_back(b);
  }
  for (void* b : blocks) std::free(b);
  std::printf("alloc_oom: %zu MiB allocated, freed, and allocated again\n", first);
  CHECK(first > 8);
  return 0;
}

}  // namespace vmtest
