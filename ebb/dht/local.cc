// The same-node fast path (dht.h, "Shards"): a get or a write served on
// the calling core from another core's shard, without a hop, while the
// shard's core keeps its reads or writes open; and the read leases that a
// primary must hold to serve reads from its copy at all.
#include <algorithm>

#include "fox/clock.h"
#include "fox/ebb/lifetime.h"
#include "fox/ebb/static_ids.h"
#include "fox/net/am.h"
#include "node.h"
#include "../internal.h"

namespace fox::ebb::dht {

void Node::OpenReads(Shard& s) {
  if (s.reads_generation.load(std::memory_order_relaxed) == s.rings.generation) {
    uint64_t until = s.reads_until_ns.load(std::memory_order_relaxed);
    if (until == UINT64_MAX) return;                      // nobody else's lease needed (a node alone)
    uint64_t margin = am::SuspicionMs() / 4 * 1'000'000;  // renewed before it runs out, on a later Look
    if (until > clock::NowNs() + margin) return;
  }
  // Every other owner the shard's keys may have (ReplicasOf: the ring's,
  // and a joiner's during a join) must hold the lease: a node alone needs
  // nobody's.
  uint64_t until = UINT64_MAX;
  for (const auto* ring : {s.rings.ring.get(), s.rings.target.get()}) {
    if (ring == nullptr) continue;
    for (NodeId n : ring->nodes()) {
      if (n == am::Self()) continue;
      auto lease = s.lease_until.find(n);
      until = std::min(until, lease == s.lease_until.end() ? 0 : lease->second);
    }
  }
  s.reads_until_ns.store(until, std::memory_order_relaxed);
  s.reads_generation.store(s.rings.generation, std::memory_order_release);
}

std::optional<Result<Dht::Item>> Node::ReadShared(Shard& s, const std::string& key) {
  uint64_t generation = s.reads_generation.load(std::memory_order_acquire);
  if (generation != rings_.generation() || generation != core_rings_[core::Current()].generation) {
    return std::nullopt;
  }
  uint64_t until = s.reads_until_ns.load(std::memory_order_relaxed);
  if (until != UINT64_MAX && clock::NowNs() >= until) return std::nullopt;
  detail::BumpOwn(per_core_[core::Current()].gets);
  SharedRead reading;  // the shard's core may replace the entry meanwhile: it stays until this ends
  const DhtEntry* entry = s.shared_items().FindLive(key, clock::NowNs);
  if (entry == nullptr) return Error::kNotFound;
  return Item{entry->value, entry->flags, entry->version};
}

// Read leases. A primary that the job has declared dead but that does not
// know it yet (a node paused, or cut off, for longer than the detector's
// timeout: a zombie) would serve stale reads from its copy: the others have
// a new primary that may have taken writes since. Its writes are safe (the
// other owners refuse a dead node's copies); for reads it holds a lease per
// other owner: that owner sent it a frame (any) within half the suspicion
// timeout, so it did not hold this node dead then, and nobody declares a
// node dead sooner than that after last hearing from it. Without a lease,
// the primary first asks each such owner (kConfirm): an owner that holds
// it dead drops its frames and never answers. False if one did not answer:
// the read is refused as by a node that is not the primary (kBusy), and the
// caller retries; meanwhile the ring drops an owner that died, or this
// zombie learns it is dead and stops (am's fencing). Each shard keeps its
// own leases (they are renewed from the transport's silence, no message).
bool Node::HoldsLease(Shard& s, uint64_t key_hash) {
  std::vector<NodeId> others = ReplicasOf(s, key_hash);
  if (others.empty()) return true;  // the key's only owner (no clock read on this path)
  uint64_t lease_ns = am::SuspicionMs() / 2 * 1'000'000;
  uint64_t now = clock::NowNs();
  std::vector<NodeId> ask;
  for (NodeId n : others) {
    uint64_t& until = s.lease_until[n];
    if (now < until) continue;
    int64_t silent = am::SilentMs(n);
    if (silent >= 0 && uint64_t(silent) * 1'000'000 < lease_ns) {
      until = now - uint64_t(silent) * 1'000'000 + lease_ns;  // from its last frame on
    } else {
      ask.push_back(n);
    }
  }
  if (ask.empty()) return true;
  bool held = AllAcknowledge(ask, kDhtId, kConfirm, {}, std::max<uint64_t>(lease_ns / 1'000'000, 100));
  if (held) {
    for (NodeId n : ask) s.lease_until[n] = now + lease_ns;  // they held this node alive after `now`
  }
  s.Count(held ? &Stats::leases_renewed : &Stats::leases_refused);
  return held;
}

void Node::OpenWrites(Shard& s) {
  uint64_t generation = s.rings.generation;  // Primary renewed it for this write
  if (s.writes_generation.load(std::memory_order_relaxed) == generation) return;
  EventMutexGuard g(s.items_lock, kOnShardCore);
  s.writes_generation.store(generation, std::memory_order_release);
}

void Node::CloseWrites(Shard& s) {
  if (s.writes_generation.load(std::memory_order_relaxed) == ~uint64_t(0)) return;
  EventMutexGuard g(s.items_lock, kOnShardCore);  // a write in progress on another core ends first
  s.writes_generation.store(~uint64_t(0), std::memory_order_relaxed);
}

std::optional<Result<Dht::Item>> Node::WriteShared(Shard& s, const DhtWrite& write, uint64_t key_hash) {
  uint64_t generation = s.writes_generation.load(std::memory_order_acquire);
  const Rings::Copy& rings = core_rings_[core::Current()];  // ShardHere renewed it
  if (generation != rings.generation || write.mode == DhtWrite::Mode::kDelete || !rings.ring ||
      !Rings::OtherOwners(rings, key_hash).empty()) {  // a key with replicas is written by its shard's core
    return std::nullopt;
  }
  std::optional<Result<DhtEntry>> applied;
  {
    EventMutexGuard g(s.items_lock);
    if (s.writes_generation.load(std::memory_order_relaxed) != generation || rings_.generation() != generation) {
      return std::nullopt;  // closed, or the rings moved: the shard's core decides
    }
    applied.emplace(s.items.Write(write, clock::NowNs()));
  }
  if (!applied->ok()) return Answered(applied->error(), Item{});
  detail::BumpOwn(per_core_[core::Current()].writes);
  return AnswerOf(write, **applied);
}

}  // namespace fox::ebb::dht
