// dht_node join KEYS [kill]: rebalancing after a join (dht_node.cc lists
// the scenarios).
//
// Rebalancing after a join (dht.h, "Joins"): nodes 0-2 run the Dht; node 0
// sets KEYS keys, node 3 joins while node 0 sets KEYS/2 more; every key
// reads back, and each node holds every key it owns in the ring of 4 and
// none it does not. kill: node 1 dies as the join starts (the join goes on
// in the ring without it).
#include <algorithm>
#include <string>

#include "fox/net/wire.h"

#include "common.h"

namespace dht_node {
namespace {

// Rebalancing: nodes 0-2 run the Dht (r = 2); node 0 sets KEYS keys, tells
// node 3 to join and sets KEYS/2 more while it does, then 100 after. Every
// key must read back, and every node must hold a copy of every key it owns
// in the ring of 4 and of none it does not (the join moved them).
int JoinTest(Dht* dht, uint64_t keys, bool kill) {
  NodeId self = fox::am::Self();
  fox::ebb::RingConfig ring;
  ring.replication = 2;
  std::vector<NodeId> members{0, 1, 2};
  if (self == 3) {
    CHECK(WaitForNode0(120'000, [] { return g_join_go.load(); }));
    uint64_t t0 = fox::clock::NowNs();
    auto r = dht->Join(ring, members);
    if (!r.ok()) std::printf("dht_join: node 3 could not join: %s\n", fox::ErrorName(r.error()));
    CHECK(r.ok());
    std::printf("dht_join: node 3 joined in %llu ms, %llu items streamed to it\n",
                (unsigned long long)((fox::clock::NowNs() - t0) / 1'000'000), (unsigned long long)dht->stats().items);
  } else {
    CHECK(dht->Start(ring, members).ok());
  }
  if (self == 0) {
    auto set = [&](uint64_t from, uint64_t to) {
      uint64_t failed = 0;
      for (uint64_t i = from; i < to; ++i) failed += !dht->Set(Key(i), Value(i, SizeOf(i)), uint32_t(i)).ok();
      CHECK(failed == 0);
    };
    set(0, keys);
    if (kill) Control(1, kDie, 0);  // a member dies as the join starts
    Control(3, kJoinGo, 0);
    set(keys, keys + keys / 2);  // while node 3 joins
    CHECK(WaitUntil(120'000, [&] { return dht->stats().joins >= 1; }));
    uint64_t total = keys + keys / 2 + 100;
    set(keys + keys / 2, total);
    Tally t = ReadAll(dht, 0, total, 0);
    std::printf("dht_join: node 0: %llu of %llu keys read back after node 3 joined, %llu missing, %llu wrong\n",
                (unsigned long long)t.ok, (unsigned long long)total, (unsigned long long)t.missing,
                (unsigned long long)t.wrong);
    CHECK(t.missing == 0 && t.wrong == 0);
    for (NodeId n = kill ? 2 : 1; n < 4; ++n) Control(n, kCheck, total);
    g_check = total;
  }
  CHECK(WaitForNode0(300'000, [] { return g_check.load() != 0; }));
  uint64_t total = g_check.load(), owned = 0, held = 0, stray = 0;
  for (uint64_t i = 0; i < total; ++i) {
    auto owners = dht->OwnersOf(Key(i));
    bool owner = std::find(owners.begin(), owners.end(), self) != owners.end();
    bool holds = dht->HoldsCopy(Key(i));
    owned += owner;
    held += owner && holds;
    stray += !owner && holds;
  }
  auto s = dht->stats();
  std::printf(
      "dht_join: node %u: holds %llu of the %llu keys it owns, %llu it does not own (%llu dropped, %llu writes"
      " fenced)\n",
      self, (unsigned long long)held, (unsigned long long)owned, (unsigned long long)stray,
      (unsigned long long)s.released, (unsigned long long)s.fenced);
  CHECK(held == owned && owned > 0 && stray == 0);
  SleepMs(500);  // the others' checks are local; let the last acks go
  return 0;
}

}  // namespace

int Join(int argc, char** argv) {
  if (argc < 3) return 2;
  uint64_t keys = std::strtoull(argv[2], nullptr, 10);
  bool kill_member = argc > 3 && std::string(argv[3]) == "kill";
  auto control = [](NodeId, HandlerId handler, const uint8_t* data, size_t length) {
    if (length != 8) return;
    if (handler == kJoinGo) g_join_go = true;
    if (handler == kDie) {
      std::printf("dht_join: node %u dies now\n", fox::am::Self());
      std::fflush(stdout);
      std::_Exit(9);
    }
    if (handler == kCheck) g_check = fox::net::wire::Load64(data);
  };
  return RunMode(control, [keys, kill_member](Dht* dht) { return JoinTest(dht, keys, kill_member); });
}

}  // namespace dht_node
