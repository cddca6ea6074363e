// Deaths (dht.h, "Failure"): the ring without the dead node, the rebuild
// that copies partitions to their new owners, and the happens-before
// barrier (Quiesce) the APGAS runtime runs for a dead place.
#include <algorithm>
#include <deque>

#include "fox/ebb/static_ids.h"
#include "fox/event.h"
#include "fox/log.h"
#include "fox/net/am.h"
#include "fox/timer.h"
#include "node.h"

namespace fox::ebb::dht {
namespace {
constexpr size_t kRebuildWindow = 32;  // copies in flight per rebuild
}  // namespace

void Node::Quiesce(NodeId origin) {
  OnEveryShard([origin](Shard& s) {
    while (s.in_progress.count(origin) != 0) timer::Sleep(1'000'000);  // its writes block on replicas meanwhile
  });
}

void Node::OnDeath(NodeId node) {
  Rings::Pair now = rings_.Get();
  std::shared_ptr<const DhtRing> before = now.ring, target = now.target;
  if (!before) return;
  bool in_ring = before->Contains(node), in_target = target && target->Contains(node);
  if (!in_ring && !in_target) return;
  std::shared_ptr<const DhtRing> after = before, next_target;
  if (in_ring) {
    auto next = before->WithoutNode(node);
    if (!next.ok()) {
      LOG_ERROR("dht: cannot drop node %u from the ring: %s", node, ErrorName(next.error()));
      return;
    }
    after = std::make_shared<const DhtRing>(std::move(*next));
    if (target) {  // a join goes on without it
      auto t = target->WithoutNode(node);
      if (t.ok()) next_target = std::make_shared<const DhtRing>(std::move(*t));
    }
  }  // else the joiner died: the join is over
  rings_.Set(after, next_target, /*rebuild=*/in_ring);
  if (!in_ring) {
    LOG_INFO("dht: joining node %u died: the join is over", node);
    return;
  }
  LOG_INFO("dht: node %u died: ring epoch %llu, %zu nodes", node, (unsigned long long)after->epoch(),
           after->nodes().size());
  event::Spawn([this, before, after] {
    uint64_t copied = Rebuild(before, after, "rebuild");
    Count(&Stats::rebuilt, copied);
    rings_.EndRebuild();
  });
  if (next_target) {
    if (joining_) {
      event::Spawn([this] { AskToJoin(); });  // members that switched say so; the others stream again
    } else {
      event::Spawn([this, after, next_target] { Stream(after, next_target); });
    }
  }
}

// Copies every item this node is the source of to the owners in `after`
// that were not owners in `before` (the others hold it already: they were in
// every write set), every shard at once (each to the same shard there). A
// partition's source is its primary in `after` if that was an owner in
// `before` (after a death: it held the data), else its primary in `before`
// (after a join: the new primary is the joiner). Version merge makes it
// safe against the writes that run meanwhile.
uint64_t Node::Rebuild(std::shared_ptr<const DhtRing> before, std::shared_ptr<const DhtRing> after, const char* what) {
  uint64_t copied[kShards] = {}, failed[kShards] = {};  // each shard writes its own
  OnEveryShard([&](Shard& s) { copied[s.index] = RebuildShard(s, *before, *after, &failed[s.index]); });
  uint64_t copies = 0, failures = 0;
  for (int i = 0; i < kShards; ++i) {
    copies += copied[i];
    failures += failed[i];
  }
  Count(&Stats::rebuild_failures, failures);
  LOG_INFO("dht: %s for ring epoch %llu: %llu copies to new owners, %llu failed", what,
           (unsigned long long)after->epoch(), (unsigned long long)copies, (unsigned long long)failures);
  return copies;
}

uint64_t Node::RebuildShard(Shard& s, const DhtRing& before, const DhtRing& after, uint64_t* failures) {
  NodeId self = am::Self();
  auto source = [&](uint32_t p) {
    NodeId primary = after.OwnersOf(p)[0];
    auto old_owners = before.OwnersOf(p);
    if (std::find(old_owners.begin(), old_owners.end(), primary) != old_owners.end()) return primary;
    return old_owners.empty() ? primary : old_owners[0];
  };
  std::vector<std::string> keys;
  {
    EventMutexGuard g(s.items_lock, kOnShardCore);
    s.items.ForEach([&](const std::string& key, const DhtEntry&) {
      if (after.nodes().empty()) return;
      if (source(after.PartitionOf(HashOf(key))) == self) keys.push_back(key);
    });
  }
  uint64_t copied = 0;
  std::deque<Future<Result<Rpc::Bytes>>> window;
  auto drain_one = [&] {
    auto r = window.front().Block();
    window.pop_front();
    bool ok = StatusOf(r) == Error::kOk;
    ++(ok ? copied : *failures);
  };
  for (const std::string& key : keys) {
    uint32_t p = after.PartitionOf(HashOf(key));
    auto old_owners = before.OwnersOf(p);
    std::vector<NodeId> destinations;
    for (NodeId n : after.OwnersOf(p)) {
      if (n != self && std::find(old_owners.begin(), old_owners.end(), n) == old_owners.end()) {
        destinations.push_back(n);
      }
    }
    if (destinations.empty()) continue;
    auto state = s.StateOf(key, after.epoch());
    if (!state) continue;
    for (NodeId n : destinations) {
      window.push_back(Rpc::Get()->Call(n, kDhtShardIds[s.index], kReplicate, state->data(), state->size()));
      if (window.size() >= kRebuildWindow) drain_one();
    }
  }
  while (!window.empty()) drain_one();
  return copied;
}

}  // namespace fox::ebb::dht
