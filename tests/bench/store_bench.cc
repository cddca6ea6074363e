// Checkpoint and restore bandwidth of the two resilient stores
// (tests/bench/store.py), an APGAS program on 3 places:
//
//   store_bench MIB...
//
// For each size S (MiB), five rounds of: place 1 writes a value of S MiB
// (BuddyStore::Set: its master and its buddy's backup acknowledged;
// ResilientStore::Set: the Dht's two replicas, chunked), reads it back at
// place 1 (BuddyStore: its master; ResilientStore: its local copy) and at
// place 0 (from place 1, or the Dht). Then place 2 writes a value of the
// largest size and dies, and place 1 reads it (BuddyStore: from place 0,
// its buddy; ResilientStore: from the Dht), as a spare restores a dead
// place's part. Prints one line per figure:
//   store_bench: STORE OP S MiB: MEDIAN MB/s (MIN..MAX)
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "fox/apgas/apgas.h"
#include "fox/apgas/buddy_store.h"
#include "fox/apgas/store.h"
#include "fox/clock.h"

namespace {
using fox::apgas::BuddyStore;
using fox::apgas::Place;
using fox::apgas::ResilientStore;

constexpr int kRounds = 5;

std::vector<uint8_t> Value(uint64_t bytes, uint64_t salt) {
  std::vector<uint8_t> v(bytes);
  for (uint64_t i = 0; i < bytes; i += 64) v[i] = uint8_t(i + salt);
  return v;
}

void Print(const char* store, const char* op, uint64_t mib, std::vector<double> mbps) {
  std::sort(mbps.begin(), mbps.end());
  std::printf("store_bench: %s %s %" PRIu64 " MiB: %.1f MB/s (%.1f..%.1f)\n", store, op, mib, mbps[mbps.size() / 2],
              mbps.front(), mbps.back());
}

// Seconds `fn` takes at `place`.
template <class Fn>
double TimedAt(Place place, Fn fn, uint64_t bytes, uint64_t salt) {
  return fox::apgas::at(
      place,
      [](Fn fn, uint64_t bytes, uint64_t salt) {
        uint64_t t = fox::clock::NowNs();
        if (!fn(bytes, salt)) throw std::runtime_error("store_bench: a value read back wrong");
        return double(fox::clock::NowNs() - t) / 1e9;
      },
      fn, bytes, salt);
}

struct BuddySet {
  bool operator()(uint64_t bytes, uint64_t salt) const {
    BuddyStore::Make("bench").Set("v", Value(bytes, salt));
    return true;
  }
  template <class A>
  void serialize(A&) {}
};
struct BuddyGet {
  uint32_t owner = 1;
  bool operator()(uint64_t bytes, uint64_t salt) const {
    auto v = BuddyStore::Make("bench").GetRemote<std::vector<uint8_t>>(Place{owner}, "v");
    return v && *v == Value(bytes, salt);
  }
  template <class A>
  void serialize(A& ar) {
    ar(owner);
  }
};
struct DhtSet {
  bool operator()(uint64_t bytes, uint64_t salt) const {
    ResilientStore::Make("bench").Set("v", Value(bytes, salt));
    return true;
  }
  template <class A>
  void serialize(A&) {}
};
struct DhtGet {
  uint32_t owner = 1;
  bool operator()(uint64_t bytes, uint64_t salt) const {
    auto v = ResilientStore::Make("bench").GetRemote<std::vector<uint8_t>>(Place{owner}, "v");
    return v && *v == Value(bytes, salt);
  }
  template <class A>
  void serialize(A& ar) {
    ar(owner);
  }
};

void Run(const std::vector<uint64_t>& sizes) {
  for (uint64_t mib : sizes) {
    uint64_t bytes = mib << 20;
    double mb = double(bytes) / 1e6;
    std::vector<double> bset, blocal, bremote, dset, dlocal, dremote;
    for (int r = 0; r < kRounds; ++r) {
      uint64_t salt = mib * 100 + uint64_t(r);
      bset.push_back(mb / TimedAt(Place{1}, BuddySet{}, bytes, salt));
      blocal.push_back(mb / TimedAt(Place{1}, BuddyGet{1}, bytes, salt));
      bremote.push_back(mb / TimedAt(Place{0}, BuddyGet{1}, bytes, salt));
      dset.push_back(mb / TimedAt(Place{1}, DhtSet{}, bytes, salt));
      dlocal.push_back(mb / TimedAt(Place{1}, DhtGet{1}, bytes, salt));
      dremote.push_back(mb / TimedAt(Place{0}, DhtGet{1}, bytes, salt));
    }
    Print("buddy", "set", mib, bset);
    Print("buddy", "local_read", mib, blocal);
    Print("buddy", "remote_read", mib, bremote);
    Print("dht", "set", mib, dset);
    Print("dht", "local_read", mib, dlocal);
    Print("dht", "remote_read", mib, dremote);
  }
  // A dead place's value: place 2 writes the largest size to both, dies, place 1 restores it.
  uint64_t mib = sizes.back(), bytes = mib << 20;
  (void)TimedAt(Place{2}, BuddySet{}, bytes, 7);
  (void)TimedAt(Place{2}, DhtSet{}, bytes, 7);
  try {
    fox::apgas::finish([] {
      fox::apgas::asyncAt(Place{2}, [] {
        std::fflush(stdout);
        std::_Exit(9);
      });
    });
  } catch (const fox::apgas::MultipleExceptions&) {
  }
  double mb = double(bytes) / 1e6;
  Print("buddy", "dead_read", mib, {mb / TimedAt(Place{1}, BuddyGet{2}, bytes, 7)});
  Print("dht", "dead_read", mib, {mb / TimedAt(Place{1}, DhtGet{2}, bytes, 7)});
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<uint64_t> sizes;
  for (int i = 1; i < argc; ++i) {
    uint64_t mib = std::strtoull(argv[i], nullptr, 10);
    if (mib == 0 || mib > 32) {
      std::printf("store_bench: sizes in MiB, 1..32\n");
      return 2;
    }
    sizes.push_back(mib);
  }
  if (sizes.empty()) sizes = {1, 8, 32};
  return fox::apgas::Main(argc, argv, [sizes] { Run(sizes); });
}
