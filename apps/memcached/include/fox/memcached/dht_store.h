// DhtStore: the memcached Store (store.h) over the job's Dht Ebb
// (fox/ebb/dht.h), so that every node's port serves one replicated store:
// a key set through any node is read through any other, and survives the
// death of fewer than r nodes. Each operation is one Dht call to the key's
// primary, which applies memcached's rule there (DhtWrite's modes), so two
// clients racing on a key through different nodes see one order.
//
// Differences from one memcached: touch gives the item a new cas (the Dht
// orders a key's states by version); stats count this node's share (its
// items as primary and replica, the writes it served as primary);
// flush_all reaches every node but is not atomic with writes racing it.
// A Dht that does not answer (kTimedOut, kBusy: a write may or may not have
// been applied) is Status::kUnavailable, which the session answers as a
// server error, never as a miss.
//
// Context: event context on any core; every call blocks the calling event
// until the Dht answers (so a Session over it must be driven from an event
// that may block, not from a network callback).
#pragma once

#include <cstddef>

#include "fox/memcached/store.h"

namespace fox::memcached {

class DhtStore : public Store {
 public:
  // max_bytes: the limit it reports (the Dht's own, per node, as Start got it).
  explicit DhtStore(size_t max_bytes) : max_bytes_(max_bytes) {}
  Status Get(std::string_view key, Time now, Item* item) override;
  Status Touch(std::string_view key, Expiry expiry, Time now, Item* item) override;
  Status Put(const Mutation& m, Time now, uint64_t* new_cas) override;
  Status Delete(std::string_view key, bool check_cas, uint64_t cas, Time now) override;
  Status Apply(const Arithmetic& a, Time now, uint64_t* value, uint64_t* new_cas) override;
  void Flush(Time when, Time now) override;
  StoreStats Stats(Time now) override;

 private:
  size_t max_bytes_;
};

}  // namespace fox::memcached
