// This node's rings (dht.h, "Routing" and "Joins"): the ring it routes by
// and, while a node joins, the target ring; the last settled ring S, the
// placement model's (dht_placement.h: every owner in S held every
// acknowledged write of its partitions when S settled; moves are planned
// from it, rebuild.cc); and a generation that moves
// with every change so that each core and shard can keep a copy of them
// and renew it only when they moved (no shared lock or count on a
// request's path). Also counts the rebuilds running, so that AtRest can
// say when no data moves (tombstones.cc collects only then). Internal to
// ebb/.
//
// Locking: one spinlock guards the pair and the count; nothing allocates
// under it (the rings are built by the caller, the old ones released
// after it). Any context but interrupts; Renew's fast path is one atomic
// load.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "fox/ebb/dht_ring.h"
#include "fox/spinlock.h"
#include "fox/thread_annotations.h"

namespace fox::ebb::dht {

class Rings {
 public:
  struct Pair {
    std::shared_ptr<const DhtRing> ring, target;  // target: T while a node joins, else null
  };
  // A copy of the rings as of `generation` (each shard's, and each calling
  // core's). Valid until renewed.
  struct alignas(64) Copy {
    uint64_t generation = ~uint64_t(0);
    std::shared_ptr<const DhtRing> ring, target;
  };

  Pair Get() const;
  std::shared_ptr<const DhtRing> ring() const { return Get().ring; }
  std::shared_ptr<const DhtRing> target() const { return Get().target; }
  // Sets both.
  void Set(std::shared_ptr<const DhtRing> ring, std::shared_ptr<const DhtRing> target);
  // Sets both if they are still `expected` (the same objects); false if
  // another change came first.
  bool Replace(const Pair& expected, std::shared_ptr<const DhtRing> ring, std::shared_ptr<const DhtRing> target);
  void BeginRebuild();
  void EndRebuild();
  uint64_t rebuilds_running() const;
  // The last settled ring (null before Start), and its change.
  std::shared_ptr<const DhtRing> settled() const;
  void Settle(std::shared_ptr<const DhtRing> settled);
  // The ring when no data moves (no join, no rebuild running, and the
  // ring is settled), else null.
  std::shared_ptr<const DhtRing> AtRest() const;

  // `copy`, renewed if the rings moved since it was taken.
  const Copy& Renew(Copy& copy) const;
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

  // Owners of the partition of `key_hash` other than this node, by
  // `rings`: the ring's and, during a join, its target's; empty for a key
  // this node alone owns.
  static std::vector<NodeId> OtherOwners(const Copy& rings, uint64_t key_hash);

 private:
  // Every request reads generation_ (Renew, the shared reads): it lies on a
  // cache line that nothing written on a request's path shares.
  alignas(64) std::atomic<uint64_t> generation_{0};
  alignas(64) mutable SpinLock lock_;
  std::shared_ptr<const DhtRing> ring_ GUARDED_BY(lock_);
  std::shared_ptr<const DhtRing> target_ GUARDED_BY(lock_);
  std::shared_ptr<const DhtRing> settled_ GUARDED_BY(lock_);
  uint64_t rebuilds_running_ GUARDED_BY(lock_) = 0;
};

}  // namespace fox::ebb::dht
