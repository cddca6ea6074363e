// Tombstones (dht.h, "Tombstones"): a delete leaves a versioned tombstone
// at every owner; once older than the grace, the key's primary has every
// other owner forget it (kCollect), then forgets it too. Not while data
// moves (a join or a rebuild).
#include <algorithm>
#include <deque>
#include <map>

#include "fox/clock.h"
#include "fox/ebb/static_ids.h"
#include "fox/event.h"
#include "fox/net/am.h"
#include "fox/timer.h"
#include "node.h"

namespace fox::ebb::dht {
namespace {
constexpr size_t kCollectBatch = 256;  // tombstones per kCollect
}  // namespace

void Node::SetTombstoneGrace(uint64_t ns) { grace_ns_.store(std::max<uint64_t>(ns, 1'000'000)); }

void Node::StartCollecting(Shard& s) {
  if (s.Tombstones() != 0 && !s.collecting) {
    s.collecting = true;
    event::Spawn([this, &s] { CollectTombstones(s); });
  }
}

// While this node holds tombstones: every period, notes how far the
// tombstones' numbering has gone (a mark); the tombstones numbered before
// a mark at least the grace old are old, and go to CollectRound.
void Node::CollectTombstones(Shard& s) {
  std::deque<std::pair<uint64_t, uint64_t>> marks;  // (NowNs, generation)
  while (s.Tombstones() != 0) {
    uint64_t grace = grace_ns_.load();
    timer::Sleep(std::clamp<uint64_t>(grace / 4, 10'000'000, 5'000'000'000));
    uint64_t now = clock::NowNs();
    {
      EventMutexGuard g(s.items_lock, kOnShardCore);
      marks.emplace_back(now, s.items.generation());
    }
    uint64_t up_to = 0;
    while (!marks.empty() && marks.front().first + grace <= now) {
      up_to = marks.front().second;
      marks.pop_front();
    }
    if (up_to == 0) continue;
    std::vector<DhtItems::Tombstone> old;
    {
      EventMutexGuard g(s.items_lock, kOnShardCore);
      old = s.items.OldTombstones(up_to);
    }
    CollectRound(s, std::move(old));
  }
  s.collecting = false;
}

// A primary collects its old tombstones: each partition's other owners
// forget them first (kCollect), then this node, if its ring did not change
// meanwhile. Not during a join or a rebuild (a copy of a tombstone in
// flight to a new owner would outlive the round there), nor for keys this
// node is not the primary of (their primary's round collects them here):
// those go back in the queue, as does a batch an owner did not acknowledge.
// If the ring changed during the round this node keeps its tombstones, so
// that a later write to such a key is numbered above them for every owner
// that still holds one; the next round collects them everywhere.
void Node::CollectRound(Shard& s, std::vector<DhtItems::Tombstone> old) {
  std::shared_ptr<const DhtRing> ring = rings_.AtRest();
  std::map<std::vector<NodeId>, std::vector<DhtItems::Tombstone>> by_owners;
  for (DhtItems::Tombstone& t : old) {
    uint64_t hash = HashOf(t.key);
    if (!ring || ring->PrimaryOf(hash) != am::Self()) {
      EventMutexGuard g(s.items_lock, kOnShardCore);
      s.items.Requeue(t.key);
    } else {
      by_owners[ReplicasOf(s, hash)].push_back(std::move(t));
    }
  }
  uint64_t collected = 0;
  for (auto& [owners, list] : by_owners) {
    for (size_t at = 0; at < list.size(); at += kCollectBatch) {
      size_t end = std::min(list.size(), at + kCollectBatch);
      std::vector<uint8_t> body = dht_wire::EncodeCollect({list.begin() + long(at), list.begin() + long(end)});
      bool collect = AllAcknowledge(owners, kDhtShardIds[s.index], kCollect, body, Rpc::kDefaultTimeoutMs) &&
                     rings_.AtRest() == ring;
      EventMutexGuard g(s.items_lock, kOnShardCore);
      for (size_t i = at; i < end; ++i) {
        if (collect) {
          collected += s.items.Collect(list[i].key, list[i].version) ? 1 : 0;
        } else {
          s.items.Requeue(list[i].key);
        }
      }
    }
  }
  s.Count(&Stats::collected, collected);
}

void Node::ServeCollect(Shard& s, const Caller& caller, const uint8_t* body, size_t length) {
  auto tombstones = dht_wire::DecodeCollect(body, length);
  if (!tombstones.ok()) {
    s.Count(&Stats::bad_requests);
    return Reply(caller, Error::kInvalidArgument);
  }
  uint64_t collected = 0;
  {
    EventMutexGuard g(s.items_lock, kOnShardCore);
    for (const DhtItems::Tombstone& t : *tombstones) {
      if (!InShard(t.key, s.index)) continue;  // not this shard's key: a sender's bug, or a forgery
      collected += s.items.Collect(t.key, t.version) ? 1 : 0;
    }
  }
  s.Count(&Stats::collected, collected);
  Reply(caller, Error::kOk);
}

}  // namespace fox::ebb::dht
