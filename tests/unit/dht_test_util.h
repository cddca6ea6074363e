// Helpers shared by the Dht's ring and simulation tests.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "fox/ebb/dht_hash.h"
#include "fox/ebb/dht_ring.h"

namespace fox::ebb::dht_test {

// Node ids first, first + 1, ..., count of them.
inline std::vector<NodeId> Nodes(uint32_t first, uint32_t count) {
  std::vector<NodeId> out;
  for (uint32_t i = 0; i < count; ++i) out.push_back(first + i);
  return out;
}

inline DhtRing MakeRing(const RingConfig& config, std::vector<NodeId> nodes) {
  auto ring = DhtRing::Create(config, std::move(nodes));
  EXPECT_TRUE(ring.ok());
  return *ring;
}

inline uint64_t KeyHash(uint64_t key) { return DhtKeyHash(&key, sizeof key); }

}  // namespace fox::ebb::dht_test
