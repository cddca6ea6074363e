// Replication (dht.h, "Replication"): the primary sends a key's state to
// its other owners after each write and answers only when each has
// acknowledged; the replicas' side applies a state only if its version is
// newer than theirs (dht_items.h), which keeps the primary's order, and
// only if the primary's view of the membership is not older than its own
// (the fence: dht_ring.cc's rule 1). Moves' copies (kCopy) share the
// replicas' side without the fence.
#include <algorithm>

#include "fox/clock.h"
#include "fox/ebb/static_ids.h"
#include "fox/net/am.h"
#include "fox/net/wire.h"
#include "fox/timer.h"
#include "node.h"

namespace fox::ebb::dht {

std::vector<NodeId> Node::ReplicasOf(Shard& s, uint64_t key_hash) {
  return Rings::OtherOwners(rings_.Renew(s.rings), key_hash);
}

bool Node::Replicate(Shard& s, const std::string& key, uint64_t key_hash) {
  uint64_t deadline = 0;      // from the first round that has replicas
  std::vector<uint8_t> sent;  // what the last round sent
  for (;;) {
    std::vector<NodeId> replicas = ReplicasOf(s, key_hash);
    if (replicas.empty()) return true;
    if (deadline == 0) deadline = clock::NowNs() + Dht::kRouteTimeoutMs * 1'000'000;
    // The key's current state (an item, live or expired, or a tombstone),
    // sent at this shard's view: the rings ReplicasOf just renewed.
    uint64_t view = ViewOf(s.rings.ring.get(), s.rings.target.get());
    if (auto state = s.StateOf(key, view)) {
      sent = std::move(*state);
    } else if (sent.empty()) {
      return true;  // nothing to copy (cannot happen after a write)
    } else {
      // This node dropped the key since the last round (a join's switch:
      // it owns it no more); the owners still get what it applied (an
      // expiry then counts from the first round: up to kRouteTimeoutMs late).
      net::wire::StoreLe<uint64_t>(sent.data(), view);
    }
    std::vector<Future<Result<Rpc::Bytes>>> calls;
    for (NodeId n : replicas) {
      calls.push_back(Rpc::Get()->Call(n, kDhtShardIds[s.index], kReplicate, sent.data(), sent.size()));
    }
    std::vector<NodeId> dead;
    bool failed = false, newer = false;
    for (size_t i = 0; i < calls.size(); ++i) {
      auto r = calls[i].Block();
      Error status = StatusOf(r);
      if (status == Error::kOk) continue;
      if (!r.ok() && r.error() == Error::kPeerDead && am::State(replicas[i]) == am::PeerState::kDead) {
        dead.push_back(replicas[i]);
      } else if (r.ok() && status == Error::kBusy) {
        newer = true;  // its rings are newer than this shard's: it did not apply the state
      } else {
        failed = true;
      }
    }
    if (failed) return false;
    if (dead.empty() && !newer) return true;
    if (!dead.empty()) {
      // A replica died: once the ring has dropped it, the new owners get the state.
      bool dropped = SleepUntil(
          [&] {
            auto ring = rings_.ring();
            return std::none_of(dead.begin(), dead.end(), [&](NodeId n) { return ring->Contains(n); });
          },
          deadline);
      if (!dropped) return false;
      s.Count(&Stats::resent);
    } else {
      // A replica has heard of a change this node has not yet: again once
      // it has (to the owners of the new rings), or once the replica's view
      // came back (a joiner's death drops its target).
      if (clock::NowNs() >= deadline) return false;
      timer::Sleep(kRetryNs);
    }
  }
}

void Node::ServeReplicate(Shard& s, const Caller& caller, const uint8_t* body, size_t length, bool write) {
  NodeId from = caller.node;
  if (am::State(from) == am::PeerState::kDead) return Reply(caller, Error::kPeerDead);  // its write never counts
  auto state = length < 8 ? Result<dht_wire::Replicate>(Error::kInvalidArgument)
                          : dht_wire::DecodeReplicate(body + 8, length - 8, clock::NowNs());
  bool ok = state.ok() && InShard(state->key, s.index);
  bool applied = false;
  if (ok) {
    const auto& [generation, ring, target] = rings_.Renew(s.rings);
    uint64_t sent_at = net::wire::Load64(body);
    if (write && ViewOf(ring.get(), target.get()) > sent_at) {
      // The fence (dht_ring.cc, rule 1): a primary that has not heard of a
      // change this node has may not send the state to every owner the
      // change added, and this node may already have streamed the key's
      // partition to them. Refused, the primary sends it again once its
      // rings caught up, to the owners they name.
      s.Count(&Stats::fenced);
      return Reply(caller, Error::kBusy);
    }
    uint64_t hash = HashOf(state->key);
    auto owns = [&](const std::shared_ptr<const DhtRing>& r) { return r && r->Owns(am::Self(), r->PartitionOf(hash)); };
    if (!write && ring && ring->epoch() > sent_at && !owns(ring) && !owns(target)) {
      s.Count(&Stats::stale_copies);  // sent by a move this node's ring has gone past
      return Reply(caller, Error::kOk);
    }
    // From the key's primary here: an equal version replaces (dht_items.h).
    bool from_primary = ring && ring->PrimaryOf(hash) == from;
    {
      EventMutexGuard g(s.items_lock, kOnShardCore);
      applied = s.items.Apply(state->key, std::move(state->entry), from_primary);
    }
    if (applied) StartCollecting(s);
  }
  {
    SpinGuard g(s.lock);
    if (ok) {
      s.stats.replicated += applied ? 1 : 0;
    } else {
      ++s.stats.bad_requests;
    }
  }
  Reply(caller, ok ? Error::kOk : Error::kInvalidArgument);
}

}  // namespace fox::ebb::dht
