// Moving data between rings (dht.h, "Failure" and "Joins"), as the
// placement model says (dht_placement.h, dht_ring.cc's design comment):
// every move is planned from the last settled ring S to the goal G (the
// ring after the deaths, or the join's target) by PlanMove, the function
// the unit simulation checks against random membership histories. S is
// not the ring before the last change: a death while data still moves to a
// new owner must not count that owner as holding it.
//
// The settle. Each node runs the transfers it is the source of in
// PlanMove(S, G) (Move), then reports (tag of S, tag of G) to every member
// (kMoved). A member settles (S := G) once every member of G reported its
// S and G: every transfer of the plan is done, so every owner in G holds
// every acknowledged write. A join settles at its switch (join.cc; the
// joiner's reports are the members' readiness). Nodes can disagree on S: a
// death may reach one before the last report of a settle and another
// after it. Reports carry S, so a node whose S is older adopts a newer one
// that another node reports, if it is a ring it moved through since its
// own S (a ring another node settled is settled), and plans again. Until
// nodes agree, no one settles (reports must match), so a plan's transfers
// never count as done on a mismatched view.
//
// Death-only changes keep every surviving owner of S among the owners of
// the ring after (a death only removes a node from preference lists): the
// primary (the ring's first owner) is a holder, and a write's replicas
// (replication.cc: the ring's owners and a target's) include every holder.
#include <algorithm>
#include <deque>

#include "../dht_placement.h"  // internal to the Ebb layer
#include "fox/ebb/static_ids.h"
#include "fox/event.h"
#include "fox/log.h"
#include "fox/net/am.h"
#include "fox/net/wire.h"
#include "fox/timer.h"
#include "node.h"

namespace fox::ebb::dht {
namespace {
constexpr size_t kRebuildWindow = 32;           // copies in flight per shard
constexpr uint64_t kRetryMoveNs = 100'000'000;  // after a move with failed copies
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
  rings_.Set(after, next_target);
  moved_.erase(node);
  if (!in_ring) {
    LOG_INFO("dht: joining node %u died: the join is over", node);
  } else {
    since_.push_back(after);
    if (next_target) since_.push_back(next_target);
    LOG_INFO("dht: node %u died: ring epoch %llu, %zu nodes", node, (unsigned long long)after->epoch(),
             after->nodes().size());
  }
  if (joining_) {
    event::Spawn([this] { AskToJoin(); });  // members that switched say so; the others stream again
  } else {
    event::Spawn([this] { Move(); });
  }
}

void Node::Move() {
  uint64_t generation = ++move_generation_;
  rings_.BeginRebuild();
  for (;;) {
    Rings::Pair now = rings_.Get();
    std::shared_ptr<const DhtRing> settled = rings_.settled();
    std::shared_ptr<const DhtRing> goal = now.target ? now.target : now.ring;
    if (!goal || !settled) break;
    bool streaming = now.target != nullptr;
    uint64_t failures = 0;
    uint64_t copied = Rebuild(*settled, *goal, streaming ? "stream" : "rebuild", &failures);
    Count(streaming ? &Stats::streamed : &Stats::rebuilt, copied);
    if (generation != move_generation_) break;  // a later change plans again
    if (failures != 0) {                        // a destination that died changes the rings; others again
      timer::Sleep(kRetryMoveNs);
      if (generation != move_generation_) break;
      continue;
    }
    Report(*settled, *goal);
    break;
  }
  rings_.EndRebuild();
}

void Node::Report(const DhtRing& settled, const DhtRing& goal) {
  uint64_t s = Tag(settled), g = Tag(goal);
  NodeId self = am::Self();
  moved_[self] = {s, g};
  std::vector<uint8_t> body(16);
  net::wire::StoreLe<uint64_t>(body.data(), s);
  net::wire::StoreLe<uint64_t>(body.data() + 8, g);
  std::vector<NodeId> to = goal.nodes();
  if (auto ring = rings_.ring()) {
    for (NodeId n : ring->nodes()) {
      if (std::find(to.begin(), to.end(), n) == to.end()) to.push_back(n);
    }
  }
  std::vector<Future<Result<Rpc::Bytes>>> calls;
  for (NodeId n : to) {
    if (n != self) calls.push_back(Rpc::Get()->Call(n, kDhtId, kMoved, body.data(), body.size()));
  }
  TrySettle();
  for (auto& c : calls) (void)c.Block();  // a node that died: its death changes the rings
}

void Node::ServeMoved(NodeId from, uint64_t id, const uint8_t* body, size_t length) {
  if (length != 16) {
    Count(&Stats::bad_requests);
    return Answer(from, id, Error::kInvalidArgument);
  }
  moved_[from] = {net::wire::Load64(body), net::wire::Load64(body + 8)};
  Answer(from, id, Error::kOk);
  if (joining_) return MaybeSwitch();
  TrySettle();
}

void Node::TrySettle() {
  std::shared_ptr<const DhtRing> settled = rings_.settled();
  if (!settled) return;
  // A newer S that another node settled: the latest ring of since_ named
  // by a report.
  size_t adopt = since_.size();
  for (const auto& [node, report] : moved_) {
    for (size_t i = 0; i < since_.size(); ++i) {
      if (Tag(*since_[i]) == report.first && (adopt == since_.size() || i > adopt)) adopt = i;
    }
  }
  if (adopt != since_.size()) {
    std::shared_ptr<const DhtRing> newer = since_[adopt];
    since_.erase(since_.begin(), since_.begin() + long(adopt) + 1);
    LOG_INFO("dht: ring epoch %llu settled elsewhere: moves planned from it", (unsigned long long)newer->epoch());
    Rings::Pair now = rings_.Get();
    if (now.target && Tag(*now.target) == Tag(*newer)) {
      Switch(now.target);  // the join's switch came to the others first
    } else {
      rings_.Settle(newer);
      event::Spawn([this] { Move(); });
    }
    return;
  }
  Rings::Pair now = rings_.Get();
  if (now.target || !now.ring) return;  // a join settles at its switch
  uint64_t s = Tag(*settled), g = Tag(*now.ring);
  if (s == g) return;
  for (NodeId n : now.ring->nodes()) {
    auto r = moved_.find(n);
    if (r == moved_.end() || r->second.first != s || r->second.second != g) return;
  }
  rings_.Settle(now.ring);
  since_.clear();
  Count(&Stats::settles);
  LOG_INFO("dht: settled at ring epoch %llu, %zu nodes", (unsigned long long)now.ring->epoch(),
           now.ring->nodes().size());
}

// Runs the transfers this node is the source of in PlanMove(settled,
// goal), every shard at once (each to the same shard there): for each
// partition whose owners changed, one holder (an owner in S still alive)
// copies it to each owner in G that is not a holder. Version merge makes
// it safe against the writes that run meanwhile.
uint64_t Node::Rebuild(const DhtRing& settled, const DhtRing& goal, const char* what, uint64_t* failures) {
  auto plan = PlanMove(settled, goal);
  if (!plan.ok()) {
    LOG_ERROR("dht: %s for ring epoch %llu: no plan: %s", what, (unsigned long long)goal.epoch(),
              ErrorName(plan.error()));
    ++*failures;
    return 0;
  }
  if (!plan->lost.empty()) {
    LOG_ERROR("dht: %s for ring epoch %llu: %zu partitions lost every copy", what, (unsigned long long)goal.epoch(),
              plan->lost.size());
  }
  NodeId self = am::Self();
  std::vector<std::vector<NodeId>> destinations(goal.partitions());
  bool any = false;
  for (const Transfer& t : plan->transfers) {
    if (t.source != self) continue;
    destinations[t.partition].push_back(t.destination);
    any = true;
  }
  uint64_t copied[kShards] = {}, failed[kShards] = {};  // each shard writes its own
  if (any) {
    OnEveryShard([&](Shard& s) { copied[s.index] = RebuildShard(s, goal, destinations, &failed[s.index]); });
  }
  uint64_t copies = 0, failures_here = 0;
  for (int i = 0; i < kShards; ++i) {
    copies += copied[i];
    failures_here += failed[i];
  }
  *failures += failures_here;
  Count(&Stats::rebuild_failures, failures_here);
  LOG_INFO("dht: %s for ring epoch %llu: %llu copies to new owners, %llu failed", what,
           (unsigned long long)goal.epoch(), (unsigned long long)copies, (unsigned long long)failures_here);
  return copies;
}

uint64_t Node::RebuildShard(Shard& s, const DhtRing& goal, const std::vector<std::vector<NodeId>>& destinations,
                            uint64_t* failures) {
  std::vector<std::string> keys;
  {
    EventMutexGuard g(s.items_lock, kOnShardCore);
    s.items.ForEach([&](const std::string& key, const DhtEntry&) {
      if (!destinations[goal.PartitionOf(HashOf(key))].empty()) keys.push_back(key);
    });
  }
  uint64_t copied = 0;
  std::deque<Future<Result<Rpc::Bytes>>> window;
  auto drain_one = [&] {
    auto r = window.front().Block();
    window.pop_front();
    ++(StatusOf(r) == Error::kOk ? copied : *failures);
  };
  for (const std::string& key : keys) {
    auto state = s.StateOf(key, goal.epoch());
    if (!state) continue;  // dropped meanwhile
    for (NodeId n : destinations[goal.PartitionOf(HashOf(key))]) {
      window.push_back(Rpc::Get()->Call(n, kDhtShardIds[s.index], kCopy, state->data(), state->size()));
      if (window.size() >= kRebuildWindow) drain_one();
    }
  }
  while (!window.empty()) drain_one();
  return copied;
}

}  // namespace fox::ebb::dht
