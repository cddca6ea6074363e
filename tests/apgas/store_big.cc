// ResilientStore values larger than a Dht value (store.cc: chunked), an
// APGAS program of its own.
//
//   store_big MIB
//
// Place 1 sets a value of MIB MiB (a pattern of its offsets); place 0
// reads it back (GetRemote) and compares every byte; place 1 replaces it
// with a value of 100 bytes, and the big value's chunks are gone from the
// Dht (their keys read absent), then place 1 sets a big value again and
// dies: place 0 reads it back whole from the survivors (a dead place's
// value). Prints the set and get rates (MB/s). Run by hosted_nodes.py
// (tests.cmake); a failed check exits 1 naming what differs.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "check.h"
#include "fox/apgas/apgas.h"
#include "fox/apgas/store.h"
#include "fox/clock.h"
#include "fox/ebb/dht.h"

namespace {
using fox::apgas::Place;

#define CHECK(...) FOX_APGAS_CHECK("store_big", __VA_ARGS__)

std::vector<uint8_t> Pattern(uint64_t bytes, uint64_t salt) {
  std::vector<uint8_t> v(bytes);
  for (uint64_t i = 0; i < bytes; ++i) v[i] = uint8_t((i * 131 + salt + (i >> 20)) & 0xff);
  return v;
}

// The first byte where `got` differs from the pattern, or its size.
uint64_t FirstDifference(const std::vector<uint8_t>& got, uint64_t bytes, uint64_t salt) {
  std::vector<uint8_t> want = Pattern(bytes, salt);
  if (got.size() != want.size()) return std::min(got.size(), want.size());
  for (uint64_t i = 0; i < bytes; ++i) {
    if (got[i] != want[i]) return i;
  }
  return bytes;
}

void Run(uint64_t mib) {
  uint64_t bytes = mib << 20;
  auto store = fox::apgas::ResilientStore::Make("big");
  double set_s = fox::apgas::at(
      Place{1},
      [](uint64_t bytes) {
        auto value = Pattern(bytes, 1);
        uint64_t start = fox::clock::NowNs();
        fox::apgas::ResilientStore::Make("big").Set("v", value);
        return double(fox::clock::NowNs() - start) / 1e9;
      },
      bytes);
  uint64_t start = fox::clock::NowNs();
  auto got = store.GetRemote<std::vector<uint8_t>>(Place{1}, "v");
  double get_s = double(fox::clock::NowNs() - start) / 1e9;
  CHECK(got, "place 1's value is absent");
  uint64_t at = FirstDifference(*got, bytes, 1);
  CHECK(at == bytes, "%zu bytes read, the first wrong at %" PRIu64, got->size(), at);
  std::printf("store_big: a %" PRIu64 " MiB value set at place 1 (%.1f MB/s) read back whole at place 0 (%.1f MB/s)\n",
              mib, double(bytes) / 1e6 / set_s, double(bytes) / 1e6 / get_s);
  // Replaced by a small value: the big one's chunks (place 1's first
  // chunked write: serial 1) are removed.
  fox::apgas::at(Place{1}, [] {
    fox::apgas::ResilientStore::Make("big").Set("v", std::string(100, 'x'));
    return 0;
  });
  auto small = store.GetRemote<std::string>(Place{1}, "v");
  CHECK(small && *small == std::string(100, 'x'), "the small value did not replace the big one");
  uint64_t chunks = (bytes + (uint64_t(1) << 20) - 1) >> 20, left = 0;
  for (uint64_t i = 0; i < chunks + 1; ++i) {
    left += fox::ebb::Dht::Get()->Get("apgas.store/big/chunk/1/1/" + std::to_string(i)).ok();
  }
  CHECK(left == 0, "%" PRIu64 " chunks of the replaced value are left", left);
  std::printf("store_big: replaced by 100 bytes: 0 of its chunks left\n");
  // A dead place's big value reads back from the survivors.
  try {
    fox::apgas::finish([&] {
      fox::apgas::asyncAt(
          Place{1},
          [](uint64_t bytes) {
            fox::apgas::ResilientStore::Make("big").Set("w", Pattern(bytes, 2));
            std::printf("store_big: place 1 dies now\n");
            std::fflush(stdout);
            std::_Exit(9);
          },
          bytes);
    });
  } catch (const fox::apgas::MultipleExceptions& e) {
    CHECK(e.HasDeadPlace(Place{1}), "%s", e.what());
  }
  CHECK(fox::apgas::isDead(Place{1}), "place 1 lives on");
  auto dead = store.GetRemote<std::vector<uint8_t>>(Place{1}, "w");
  CHECK(dead, "dead place 1's value is absent");
  at = FirstDifference(*dead, bytes, 2);
  CHECK(at == bytes, "%zu bytes read, the first wrong at %" PRIu64, dead->size(), at);
  std::printf("store_big: dead place 1's %" PRIu64 " MiB value read back whole: PASS\n", mib);
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 64;
  if (mib == 0 || mib > 1024) {
    std::printf("store_big: expected MIB in 1..1024\n");
    return 2;
  }
  return fox::apgas::Main(argc, argv, [mib] { Run(mib); });
}
