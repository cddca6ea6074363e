// A shard: one of a node's per-core representatives of the Dht (dht.h,
// "Shards"). It holds its keys' items, the takes and waits held for them
// (waits.cc), its tombstones' collector (tombstones.cc), its read leases
// and the read and write openings of the same-node fast path (local.cc),
// and its own counters. Internal to ebb/.
//
// Threads: touched only by events on its core, except the items (other
// cores read them under a SharedRead and write them, while the shard's
// writes are open, holding `items_lock`), the openings (atomics) and the
// counters (`lock`).
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "fox/ebb/dht.h"
#include "fox/ebb/dht_items.h"
#include "fox/event_mutex.h"
#include "fox/future.h"
#include "fox/spinlock.h"
#include "fox/thread_annotations.h"
#include "protocol.h"
#include "rings.h"

namespace fox::ebb::dht {

// How the shard's own core waits for its items lock: spinning, for it must
// not let its other events run between what it checked and what it writes
// (the lock's other holders are writes from other cores and stats, one
// short section each). Other cores may block (EventMutex).
inline constexpr auto kOnShardCore = EventMutex::Wait::kSpin;

// Who asked: a node's Rpc request (node, id), or a call on this node that
// skipped the transport (`local` gets the reply's bytes).
struct Caller {
  NodeId node;
  uint64_t id;
  std::shared_ptr<Promise<Result<std::vector<uint8_t>>>> local;
};

// A take or wait the primary holds until it can be served or wait_ms passes.
struct Waiter {
  Caller caller;
  DhtWrite write;
  uint64_t deadline_ns;
};

struct Shard {
  using Stats = Dht::Stats;
  Shard(int index_, int core_) : index(index_), core(core_) {}
  const int index;
  const int core;
  // The shard's items: changed by its core, and by the other cores while
  // its writes are open (`writes_generation`, WriteShared), each holding
  // `items_lock`; read without it under a SharedRead (what a writer on
  // another core replaces is retired, not freed: DhtItems::share_reads).
  // The lock is an EventMutex (a write allocates its new item under it):
  // a writer on another core spins while the holder writes and blocks its
  // event only if the holder is held up; the shard's core only spins
  // (kOnShardCore). As fast as the spinlock it replaced (make bench
  // B=dht_cores, 2 cores, same run: hosted 2.18-2.42 M sets/s against
  // 2.25-2.42 M; compute node 216-239 k against 222-237 k). Writes only on
  // the shard's core (a hop each) gave 1.24 x the sets of 1 core on a
  // compute node and 0.63 x hosted.
  alignas(64) mutable EventMutex items_lock;
  DhtItems items GUARDED_BY(items_lock);
  const DhtItems& shared_items() const NO_THREAD_SAFETY_ANALYSIS { return items; }  // SharedRead held
  std::unordered_map<std::string, std::deque<Waiter>> waiters;
  bool sweeping = false;                             // Sweep runs
  bool collecting = false;                           // CollectTombstones runs
  std::unordered_map<NodeId, uint64_t> lease_until;  // NowNs a read lease holds until, by other owner
  std::unordered_map<NodeId, uint32_t> in_progress;  // writes being served, by caller
  Rings::Copy rings;                                 // Rings::Renew renews it
  // Gets from other cores (ReadShared), open while `reads_generation` is
  // the rings' generation and the clock is below `reads_until_ns`: the
  // shard's core found this node the primary of its keys by the ring of
  // that generation and held every other node's read lease until then
  // (OpenReads). Written by the shard's core only; on a cache line of their
  // own (every core reads them on every get; the shard's core writes `lock`
  // on every request it serves).
  alignas(64) std::atomic<uint64_t> reads_generation{~uint64_t(0)};
  std::atomic<uint64_t> reads_until_ns{0};
  // Writes from other cores (WriteShared), open while `writes_generation`
  // is the rings' generation: the shard's core served a write as the
  // primary with nobody waiting on the shard's keys (Wake runs on its core
  // only); WriteShared then writes, holding `items_lock`, a key that has no
  // other owner by the ring of that generation (and the joiner's, in a
  // join), after checking again under the lock that the rings did not move
  // and the writes were not closed (CloseWrites: before a write that may
  // wait). A ring move thus waits for a write in progress (the shard reads
  // its items under the lock) and ends the later ones. Written by the
  // shard's core only, with `items_lock` held.
  std::atomic<uint64_t> writes_generation{~uint64_t(0)};
  alignas(64) mutable SpinLock lock;
  Stats stats GUARDED_BY(lock);

  void Count(uint64_t Stats::*counter, uint64_t n = 1) {
    SpinGuard g(lock);
    stats.*counter += n;
  }
  size_t Tombstones() {
    EventMutexGuard g(items_lock, kOnShardCore);
    return items.tombstones();
  }
  // What replicating `key` sends (ReplicateBody) at ring `epoch`; nullopt
  // if it holds nothing for `key`.
  std::optional<std::vector<uint8_t>> StateOf(const std::string& key, uint64_t epoch) {
    EventMutexGuard g(items_lock, kOnShardCore);
    const DhtEntry* current = items.Held(key);
    if (current == nullptr) return std::nullopt;
    return ReplicateBody(key, *current, epoch);
  }
};

}  // namespace fox::ebb::dht
