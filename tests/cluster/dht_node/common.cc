// dht_node's shared helpers (common.h).
#include <algorithm>

#include "common.h"
#include "fox/net/wire.h"

namespace dht_node {

std::string Key(uint64_t i) { return "key:" + std::to_string(i); }
std::string Value(uint64_t i, size_t size) {
  std::string v(size, '\0');
  for (size_t k = 0; k < size; ++k) v[k] = char('a' + (i * 31 + k) % 26);
  return v;
}
size_t SizeOf(uint64_t i) { return i % 50 == 0 ? 5000 : 1 + i % 300; }

void SleepMs(uint64_t ms) { fox::timer::Sleep(ms * 1'000'000); }

void Control(NodeId to, HandlerId handler, uint64_t arg) {
  uint8_t body[8];
  fox::net::wire::StoreLe<uint64_t>(body, arg);
  auto r = fox::ebb::Messenger::Get()->SendWait(to, kControl, handler, body, sizeof body);
  CHECK(r.ok());
  fox::ebb::Messenger::Get()->Flush(to);
}

Tally ReadAll(Dht* dht, uint64_t first, uint64_t keys, int big) {
  Tally t;
  for (uint64_t i = first; i < first + keys; ++i) {
    auto got = dht->Get(Key(i));
    if (!got.ok()) {
      if (t.missing++ < 5) std::printf("dht: get %s: %s\n", Key(i).c_str(), fox::ErrorName(got.error()));
    } else if (got->value != Value(i, SizeOf(i)) || got->flags != uint32_t(i)) {
      ++t.wrong;
    } else {
      ++t.ok;
    }
  }
  for (int b = 0; b < big; ++b) {
    auto got = dht->Get("big:" + std::to_string(b));
    if (!got.ok()) {
      ++t.missing;
    } else if (got->value != Value(b, fox::ebb::kDhtMaxValue)) {
      ++t.wrong;
    } else {
      ++t.ok;
    }
  }
  return t;
}

void ReportShards(Dht* dht) {
  auto load = dht->CoreLoad();
  std::printf("dht: node %u served requests on %d of %zu cores (%llu gets read from another core's shard)\n",
              fox::am::Self(), int(load.size() - std::count(load.begin(), load.end(), 0)), load.size(),
              (unsigned long long)dht->stats().shared_gets);
}

// Once every peer is alive: the Dht with replication r. Returns the peers.
std::vector<NodeId> StartDht(Dht* dht, uint32_t r) {
  auto peers = fox::am::Peers();
  CHECK(WaitUntil(30'000, [&] {
    for (NodeId n : peers) {
      if (fox::am::State(n) != fox::am::PeerState::kAlive) return false;
    }
    return true;
  }));
  fox::ebb::RingConfig ring;
  ring.replication = r;
  CHECK(dht->Start(ring).ok());
  return peers;
}

}  // namespace dht_node
