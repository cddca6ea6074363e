// This node's Dht: construction, Start, shards at once, and what it
// reports (node.h).
#include "node.h"

#include <algorithm>

#include "fox/boot_args.h"
#include "fox/clock.h"
#include "fox/ebb/lifetime.h"
#include "fox/ebb/messenger.h"
#include "fox/ebb/rpc.h"
#include "fox/ebb/static_ids.h"
#include "fox/event.h"
#include "fox/log.h"
#include "fox/net/am.h"

namespace fox::ebb::dht {
namespace {
// Every counter of Stats, for sums (Stats is counters only).
constexpr uint64_t Dht::Stats::*kCounters[] = {&Dht::Stats::served_gets,
                                               &Dht::Stats::served_writes,
                                               &Dht::Stats::served_deletes,
                                               &Dht::Stats::replicated,
                                               &Dht::Stats::not_primary,
                                               &Dht::Stats::bad_requests,
                                               &Dht::Stats::retries,
                                               &Dht::Stats::resent,
                                               &Dht::Stats::rebuilt,
                                               &Dht::Stats::rebuild_failures,
                                               &Dht::Stats::rebuilds_running,
                                               &Dht::Stats::flushed,
                                               &Dht::Stats::waiting,
                                               &Dht::Stats::waits_timed_out,
                                               &Dht::Stats::items,
                                               &Dht::Stats::live,
                                               &Dht::Stats::bytes,
                                               &Dht::Stats::deduplicated,
                                               &Dht::Stats::joins,
                                               &Dht::Stats::streamed,
                                               &Dht::Stats::released,
                                               &Dht::Stats::stale_copies,
                                               &Dht::Stats::fenced,
                                               &Dht::Stats::collected,
                                               &Dht::Stats::leases_renewed,
                                               &Dht::Stats::leases_refused,
                                               &Dht::Stats::shared_gets,
                                               &Dht::Stats::shared_writes,
                                               &Dht::Stats::settles};
static_assert(sizeof(kCounters) / sizeof(kCounters[0]) * sizeof(uint64_t) == sizeof(Dht::Stats),
              "a counter of Dht::Stats is missing from kCounters");

int ServingCores() {
  int kernel = std::max(1, core::KernelCores());
  return int(std::clamp<uint64_t>(BootArgNumber("fox.dht_cores", uint64_t(kernel)), 1, uint64_t(kernel)));
}
}  // namespace

Node::Node() : core_(core::Current()), serving_cores_(ServingCores()) {
  (void)Rpc::Get()->pending();  // constructs the Rpc Ebb here: replies need it
  auto serve = [this](NodeId from, HandlerId handler, const uint8_t* data, size_t length) {
    Serve(from, handler, data, length);
  };
  if (auto r = Messenger::Get()->ListenAny(kDhtId, serve, core_); !r.ok()) {
    LOG_ERROR("Dht: cannot receive messages: %s", ErrorName(r.error()));
  }
  for (int i = 0; i < kShards; ++i) {
    shards_[i] = std::make_unique<Shard>(i, ShardCore(i));
    Shard* shard = shards_[i].get();
    {
      EventMutexGuard g(shard->items_lock, kOnShardCore);
      shard->items.share_bytes(&bytes_pool_);  // max_bytes is the node's
      shard->items.share_reads(RetireLater);   // ReadShared, from the other cores
    }
    auto serve_shard = [this, shard](NodeId from, HandlerId handler, const uint8_t* data, size_t length) {
      ServeShard(*shard, from, handler, data, length);
    };
    if (auto r = Messenger::Get()->ListenAny(kDhtShardIds[i], serve_shard, shard->core); !r.ok()) {
      LOG_ERROR("Dht: shard %d cannot receive messages: %s", i, ErrorName(r.error()));
    }
  }
}

Node::~Node() {
  if (subscription_ != 0) am::StopPeerState(subscription_);
  Messenger::Get()->StopListeningAny(kDhtId);
  for (EbbId id : kDhtShardIds) Messenger::Get()->StopListeningAny(id);
}

void Node::Count(uint64_t Stats::*counter, uint64_t n) {
  SpinGuard g(stats_lock_);
  stats_.*counter += n;
}

void Node::OnEveryShard(Function<void(Shard&)> work) {
  std::vector<Future<void>> done;
  done.reserve(kShards);
  for (auto& shard : shards_) {
    auto finished = std::make_shared<Promise<void>>();
    done.push_back(finished->GetFuture());
    Shard* s = shard.get();
    event::SpawnRemote(s->core, [&work, s, finished] {  // `work` outlives them: this waits
      work(*s);
      finished->SetValue();
    });
  }
  for (auto& f : done) f.Block();
}

void Node::SetLimit(size_t max_bytes) {
  OnEveryShard([max_bytes](Shard& s) {
    EventMutexGuard g(s.items_lock, kOnShardCore);
    s.items.set_limit(max_bytes);
  });
}

Result<void> Node::Start(const RingConfig& config, std::vector<NodeId> members, size_t max_bytes) {
  if (rings_.ring()) return Error::kAlreadyExists;
  NodeId self = am::Self();
  if (members.empty()) {
    members = am::Peers();
    if (std::find(members.begin(), members.end(), self) == members.end()) members.push_back(self);
  }
  if (std::find(members.begin(), members.end(), self) == members.end()) return Error::kInvalidArgument;
  auto ring = DhtRing::Create(config, members);
  if (!ring.ok()) return ring.error();
  SetLimit(max_bytes);
  auto shared = std::make_shared<const DhtRing>(std::move(*ring));
  rings_.Settle(shared);
  rings_.Set(shared, nullptr);
  FollowDeaths(members);
  LOG_INFO("dht: started on %zu nodes, r = %u, %d shards on %d cores", members.size(), config.replication, kShards,
           std::min(kShards, serving_cores_));
  return Ok();
}

void Node::FollowDeaths(const std::vector<NodeId>& members) {
  subscription_ = am::OnPeerState(
      [this](NodeId node, am::PeerState state) {
        if (state == am::PeerState::kDead) OnDeath(node);
      },
      core_);
  // Deaths declared before the subscription: the same ring as the nodes
  // that heard of them later.
  for (NodeId node : members) {
    if (node != am::Self() && am::State(node) == am::PeerState::kDead) {
      event::SpawnRemote(core_, [this, node] { OnDeath(node); });
    }
  }
}

bool Node::HoldsCopy(const std::string& key) {
  auto done = std::make_shared<Promise<bool>>();
  auto future = done->GetFuture();
  Shard* s = &ShardFor(HashOf(key));
  event::SpawnRemote(s->core, [s, key, done] {
    SharedRead reading;
    done->SetValue(s->shared_items().Find(key, clock::NowNs()) != nullptr);
  });
  return future.Block();
}

uint64_t Node::epoch() const {
  auto ring = rings_.ring();
  return ring ? ring->epoch() : 0;
}

std::vector<NodeId> Node::OwnersOf(const std::string& key) const {
  auto ring = rings_.ring();
  if (!ring) return {};
  auto owners = ring->OwnersOf(ring->PartitionOf(HashOf(key)));
  return {owners.begin(), owners.end()};
}

std::vector<NodeId> Node::members() const {
  auto ring = rings_.ring();
  return ring ? ring->nodes() : std::vector<NodeId>{};
}

Dht::Stats Node::stats() const {
  Stats out;
  {
    SpinGuard g(stats_lock_);
    out = stats_;
  }
  out.rebuilds_running = rings_.rebuilds_running();
  for (const auto& shard : shards_) {
    {
      SpinGuard g(shard->lock);
      for (auto counter : kCounters) out.*counter += shard->stats.*counter;
    }
    EventMutexGuard g(shard->items_lock);  // the sizes as they are (other cores write too)
    out.items += shard->items.size();
    out.live += shard->items.stored();
    out.bytes += shard->items.bytes();
    out.deduplicated += shard->items.deduplicated();
  }
  for (int core = 0; core < core::kMaxCores; ++core) {
    uint64_t gets = per_core_[core].gets.load(std::memory_order_relaxed);
    out.served_gets += gets;
    out.shared_gets += gets;
    uint64_t writes = per_core_[core].writes.load(std::memory_order_relaxed);
    out.served_writes += writes;
    out.shared_writes += writes;
  }
  return out;
}

std::vector<uint64_t> Node::CoreLoad() const {
  std::vector<uint64_t> load(std::min(kShards, serving_cores_), 0);
  for (const auto& shard : shards_) {
    SpinGuard g(shard->lock);
    load[shard->core] +=
        shard->stats.served_gets + shard->stats.served_writes + shard->stats.served_deletes + shard->stats.replicated;
  }
  for (size_t core = 0; core < load.size(); ++core) {
    load[core] +=
        per_core_[core].gets.load(std::memory_order_relaxed) + per_core_[core].writes.load(std::memory_order_relaxed);
  }
  return load;
}

}  // namespace fox::ebb::dht
