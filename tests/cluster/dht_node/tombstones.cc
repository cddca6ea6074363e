// dht_node tombstones KEYS: tombstones are collected (dht_node.cc lists
// the scenarios).
//
// Tombstones are collected (dht.h, "Tombstones"; grace 1 s here): 3 nodes,
// r = 2. Node 0 sets KEYS keys and deletes them all; the tombstones are
// there at once (a deleted key cannot come back), and within 20 s none is
// left on any node. Node 0 then sets the first half again (versions start
// over) and deletes the second half's keys again (absent now): the first
// half reads back, the second is not found, and each node holds exactly its
// copies of the first half.
#include <algorithm>
#include <string>

#include "fox/net/wire.h"

#include "common.h"

namespace dht_node {
namespace {

int Tombstones(Dht* dht, uint64_t keys) {
  NodeId self = fox::am::Self();
  dht->SetTombstoneGrace(1'000'000'000);
  auto no_tombstones = [dht] {
    auto s = dht->stats();
    return s.items == s.live;
  };
  if (self == 0) {
    uint64_t failed = 0;
    for (uint64_t i = 0; i < keys; ++i) failed += !dht->Set(Key(i), Value(i, SizeOf(i)), uint32_t(i)).ok();
    for (uint64_t i = 0; i < keys; ++i) failed += !dht->Delete(Key(i)).ok();
    CHECK(failed == 0);
    auto s = dht->stats();
    std::printf("dht_tombstones: node 0: %llu keys set and deleted: %llu tombstones here, %llu live\n",
                (unsigned long long)keys, (unsigned long long)(s.items - s.live), (unsigned long long)s.live);
    CHECK(s.items > 0 && s.live == 0);
    for (NodeId n = 1; n < 3; ++n) Control(n, kCheck, keys);
    g_check = keys;
  }
  CHECK(WaitForNode0(120'000, [] { return g_check.load() != 0; }));
  uint64_t t0 = fox::clock::NowNs();
  bool gone = WaitUntil(20'000, no_tombstones);
  auto s = dht->stats();
  std::printf("dht_tombstones: node %u: %s: %llu collected here, %llu entries left (%llu live)\n", self,
              gone ? "no tombstone left" : "tombstones left", (unsigned long long)s.collected,
              (unsigned long long)s.items, (unsigned long long)s.live);
  CHECK(gone && s.items == 0);
  std::printf("dht_tombstones: node %u: collected within %llu ms of the check\n", self,
              (unsigned long long)((fox::clock::NowNs() - t0) / 1'000'000));
  if (self == 0) {
    for (NodeId n = 1; n < 3; ++n) CHECK(WaitUntil(30'000, [n] { return g_expected.load() & (1u << n); }));
    uint64_t half = keys / 2, failed = 0;
    for (uint64_t i = 0; i < half; ++i) {
      auto cas = dht->Set(Key(i), Value(i, SizeOf(i)), uint32_t(i));
      failed += !cas.ok() || *cas != 1;  // versions start over
    }
    uint64_t absent = 0;
    for (uint64_t i = half; i < keys; ++i) absent += dht->Delete(Key(i)).error() == fox::Error::kNotFound;
    Tally t = ReadAll(dht, 0, half, 0);
    uint64_t still_gone = 0;
    for (uint64_t i = half; i < keys; ++i) still_gone += dht->Get(Key(i)).error() == fox::Error::kNotFound;
    std::printf(
        "dht_tombstones: node 0: %llu keys set again at version 1 (%llu failed), %llu of %llu read back; %llu of "
        "%llu deleted ones absent\n",
        (unsigned long long)half, (unsigned long long)failed, (unsigned long long)t.ok, (unsigned long long)half,
        (unsigned long long)still_gone, (unsigned long long)(keys - half));
    CHECK(failed == 0 && t.ok == half && absent == keys - half && still_gone == keys - half);
    for (NodeId n = 1; n < 3; ++n) Control(n, kQuit, half);
    g_quit = true;
  } else {
    Control(0, kCheck, uint64_t(1) << 32 | self);  // collected here
    CHECK(WaitForNode0(120'000, [] { return g_quit.load(); }));
  }
  uint64_t half = keys / 2, owned = 0, held = 0;
  for (uint64_t i = 0; i < keys; ++i) {
    auto owners = dht->OwnersOf(Key(i));
    bool owner = std::find(owners.begin(), owners.end(), self) != owners.end();
    owned += owner && i < half;
    held += dht->HoldsCopy(Key(i));
  }
  s = dht->stats();
  std::printf("dht_tombstones: node %u: holds %llu keys, owns %llu, %llu entries\n", self, (unsigned long long)held,
              (unsigned long long)owned, (unsigned long long)s.items);
  CHECK(held == owned && s.items == owned);
  SleepMs(500);  // the others' checks are local; let the last acks go
  return 0;
}

}  // namespace

int Tombstones(int argc, char** argv) {
  if (argc < 3) return 2;
  uint64_t keys = std::strtoull(argv[2], nullptr, 10);
  auto control = [](NodeId, HandlerId handler, const uint8_t* data, size_t length) {
    if (length != 8) return;
    uint64_t arg = fox::net::wire::Load64(data);
    if (handler == kQuit) g_quit = true;
    if (handler == kCheck && arg >> 32 == 0) g_check = arg;
    if (handler == kCheck && arg >> 32 == 1) g_expected |= uint64_t(1) << (arg & 31);
  };
  return RunMode(control, [keys](Dht* dht) {
    (void)StartDht(dht, 2);
    return Tombstones(dht, keys);
  });
}

}  // namespace dht_node
