// Joins (dht.h, "Joins"): a node joins a running Dht. The joiner routes
// by the members' ring and asks each member to add it; a member takes the
// target T = its ring plus the joiner and moves data as the placement
// model plans (rebuild.cc's Move: the joiner's partitions from the last
// settled ring S), then reports it (kMoved, to the joiner too); once every
// member reported T from the same S, the joiner tells them all to switch
// to T, which settles it. Deaths meanwhile: rebuild.cc's OnDeath
// recomputes the ring and T, and the moves start again.
#include <algorithm>
#include <optional>
#include <set>

#include "fox/clock.h"
#include "fox/ebb/static_ids.h"
#include "fox/event.h"
#include "fox/log.h"
#include "fox/net/am.h"
#include "fox/net/wire.h"
#include "fox/timer.h"
#include "node.h"

namespace fox::ebb::dht {

Result<void> Node::Join(const RingConfig& config, std::vector<NodeId> members, uint64_t timeout_ms, size_t max_bytes) {
  if (rings_.ring()) return Error::kAlreadyExists;
  NodeId self = am::Self();
  if (members.empty() || std::find(members.begin(), members.end(), self) != members.end()) {
    return Error::kInvalidArgument;
  }
  auto ring = DhtRing::Create(config, members);
  if (!ring.ok()) return ring.error();
  auto settled = std::make_shared<const DhtRing>(std::move(*ring));
  auto target = settled->WithNode(self);
  if (!target.ok()) return target.error();
  SetLimit(max_bytes);
  rings_.Settle(settled);
  rings_.Set(settled, std::make_shared<const DhtRing>(std::move(*target)));
  event::SpawnRemote(core_, [this] {
    joining_ = true;
    AskToJoin();
  });
  FollowDeaths(members);
  LOG_INFO("dht: joining %zu nodes, r = %u, %d shards on %d cores", members.size(), config.replication, kShards,
           std::min(kShards, serving_cores_));
  uint64_t deadline = clock::NowNs() + timeout_ms * 1'000'000;
  if (!SleepUntil([&] { return joined_set_.load(std::memory_order_acquire); }, deadline)) return Error::kTimedOut;
  return Ok();
}

// The joiner (home core): asks every member of its ring to add it, again
// while one refuses (another join runs there) or has not heard of it yet.
void Node::AskToJoin() {
  uint64_t generation = ++ask_generation_;
  std::set<NodeId> answered;
  for (;;) {
    if (!joining_ || generation != ask_generation_) return;  // done, or a newer round asks
    auto ring = rings_.ring();
    bool all = true;
    for (NodeId n : ring->nodes()) {
      if (n == am::Self() || answered.count(n) != 0) continue;
      auto r = Rpc::Get()->Call(n, kDhtId, kJoin, nullptr, 0, 10'000).Block();
      if (!joining_ || generation != ask_generation_) return;
      Error status = StatusOf(r);
      uint64_t epoch = 0;
      std::vector<NodeId> nodes;
      if (r.ok() && status == Error::kOk) {
        answered.insert(n);  // it streams, then says it is ready
        if (DecodeRing(r->data() + 4, r->size() - 4, &epoch, &nodes) && TakeRing(epoch, std::move(nodes))) {
          answered.clear();  // ask its members, this one again too (for the new target)
          all = false;
        }
      } else if (r.ok() && status == Error::kAlreadyExists) {
        answered.insert(n);
        ready_[n] = kSwitched;
      } else if (!r.ok() && am::State(n) == am::PeerState::kDead) {
        answered.insert(n);  // its death changes the ring: OnDeath asks again
      } else {
        all = false;  // busy with another join, or not joined yet: again soon
      }
    }
    MaybeSwitch();
    if (all) return;
    timer::Sleep(kRetryNs * 5);
  }
}

// The joiner: its rings become the members' (their epoch: ring changes
// count from it alike on every node, ServeReplicate compares epochs; their
// members: the joiner may have known only one). True if they changed.
bool Node::TakeRing(uint64_t epoch, std::vector<NodeId> nodes) {
  Rings::Pair now = rings_.Get();
  if (!now.ring || !now.target) return false;
  std::sort(nodes.begin(), nodes.end());
  if (now.ring->epoch() == epoch && now.ring->nodes() == nodes) return false;
  if (std::find(nodes.begin(), nodes.end(), am::Self()) != nodes.end()) return false;
  auto settled = DhtRing::Create(now.ring->config(), nodes, epoch);
  if (!settled.ok()) return false;
  auto target = settled->WithNode(am::Self());
  if (!target.ok()) return false;
  auto shared = std::make_shared<const DhtRing>(std::move(*settled));
  if (!rings_.Replace(now, shared, std::make_shared<const DhtRing>(std::move(*target)))) return false;
  rings_.Settle(shared);  // the joiner holds nothing: its S only names the members' ring
  return true;
}

// A member (home core): takes the joiner into its target and moves data.
void Node::ServeJoin(NodeId from, uint64_t id) {
  Rings::Pair now = rings_.Get();
  if (!now.ring) return Answer(from, id, Error::kBusy);
  std::vector<uint8_t> mine = EncodeRing(*now.ring);  // the joiner routes by it
  if (now.ring->Contains(from)) return Answer(from, id, Error::kAlreadyExists, mine);
  std::shared_ptr<const DhtRing> target = now.target;
  if (target && !target->Contains(from)) return Answer(from, id, Error::kBusy);  // another joiner's
  if (!target) {
    auto next = now.ring->WithNode(from);
    if (!next.ok()) return Answer(from, id, next.error());
    target = std::make_shared<const DhtRing>(std::move(*next));
    if (!rings_.Replace(now, now.ring, target)) return Answer(from, id, Error::kBusy);  // the ring moved: again
    since_.push_back(target);
  }
  LOG_INFO("dht: node %u joins: streaming its partitions", from);
  Answer(from, id, Error::kOk, mine);
  Move();  // from now on every write goes to the target's owners too (Replicate)
}

// The joiner (home core): every member reported the target from the same
// settled ring (its plan is done), or routes by a ring with this node?
void Node::MaybeSwitch() {
  if (!joining_ || switching_) return;
  auto [ring, target] = rings_.Get();
  if (!ring || !target) return;
  uint64_t tag = Tag(*target);
  std::optional<uint64_t> from;  // the settled ring the members planned from
  for (NodeId n : ring->nodes()) {
    auto r = ready_.find(n);
    if (r != ready_.end() && r->second == kSwitched) continue;
    auto m = moved_.find(n);
    if (m == moved_.end() || m->second.second != tag || (from && *from != m->second.first)) return;
    from = m->second.first;
  }
  switching_ = true;
  std::vector<uint8_t> body = TagBytes(tag);
  std::vector<Future<Result<Rpc::Bytes>>> calls;
  for (NodeId n : ring->nodes()) calls.push_back(Rpc::Get()->Call(n, kDhtId, kJoinSwitch, body.data(), body.size()));
  for (auto& c : calls) (void)c.Block();  // a member that died: its death replaces nothing here now
  Switch(target);
  joining_ = false;
  switching_ = false;
  joined_set_.store(true, std::memory_order_release);
}

void Node::ServeJoinSwitch(NodeId from, uint64_t id, const uint8_t* body, size_t length) {
  if (length != 8) return Answer(from, id, Error::kInvalidArgument);
  std::shared_ptr<const DhtRing> target = rings_.target();
  // Another target here (a death the joiner has not seen yet): the joiner
  // asks again for the one they will agree on.
  if (!target || Tag(*target) != net::wire::Load64(body)) return Answer(from, id, Error::kBusy);
  Switch(target);
  Answer(from, id, Error::kOk);
}

// Routes by `target` from now on, settled (every member's plan is done),
// and drops what this node no longer owns.
void Node::Switch(std::shared_ptr<const DhtRing> target) {
  rings_.Set(target, nullptr);
  rings_.Settle(target);
  since_.clear();
  Count(&Stats::joins);
  LOG_INFO("dht: joined: ring epoch %llu, %zu nodes", (unsigned long long)target->epoch(), target->nodes().size());
  NodeId self = am::Self();
  OnEveryShard([self, &target](Shard& s) {
    std::vector<std::string> gone;
    {
      EventMutexGuard g(s.items_lock, kOnShardCore);
      s.items.ForEach([&](const std::string& key, const DhtEntry&) {
        if (!target->Owns(self, target->PartitionOf(HashOf(key)))) gone.push_back(key);
      });
      for (const std::string& key : gone) s.items.Drop(key);
    }
    s.Count(&Stats::released, gone.size());
  });
}

}  // namespace fox::ebb::dht
