// What a node holds for a key of the Dht (dht_items.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fox::ebb {

// What a node holds for a key.
struct DhtEntry {
  uint64_t version = 0;  // > 0 for anything stored
  bool tombstone = false;
  uint32_t flags = 0;
  uint64_t expiry_ns = 0;  // on the holder's clock; 0: never
  std::string value;
  // The last writes applied (oldest first, at most kDhtRecentWrites):
  // their requests, the versions they made, and for kIncr/kDecr/kTake the
  // value they answered.
  struct Applied {
    uint64_t request = 0;
    uint64_t version = 0;
    std::string answer;
    bool operator==(const Applied&) const = default;
  };
  std::vector<Applied> applied;
  bool operator==(const DhtEntry&) const = default;
  // Not deleted and not expired at now_ns.
  bool live(uint64_t now_ns) const { return !tombstone && (expiry_ns == 0 || now_ns < expiry_ns); }
};

}  // namespace fox::ebb
