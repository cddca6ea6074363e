// The Dht Ebb over Rpc (dht.h).
//
// Requests (Rpc bodies; dht_items.h's wire), to the key's shard's Ebb
// (kDhtShardIds[ShardOf(hash)]) for kGet, kWrite, kReplicate and kCollect,
// to kDhtId for the others:
//   kGet:       key                 reply: status, then an item on kOk
//   kWrite:     a write             reply: status, then on kOk u64 cas, or
//                                   an item for DhtWriteAnswersItem modes
//   kReplicate: u64 the sender's ring epoch, a replicated state   reply: status
//               (a node whose ring is newer and that owns the key in neither
//               its ring nor its target drops it: a copy from a stale move)
//   kFlush:     u32 delay_s         reply: status
//   kCount:     (empty)             reply: status, u64 items, u64 bytes (live, as primary)
//   kJoin:      (empty), from a joiner  reply: status (kOk: streaming; kAlreadyExists:
//                                   routes by a ring with it; kBusy: another join runs),
//                                   then u64 the member's ring epoch, u32 count and the
//                                   ring's members (the joiner routes by that ring)
//   kJoinReady: u64 target tag      to the joiner: streamed for that target; reply: status
//   kJoinSwitch: u64 target tag     from the joiner: route by the target; reply: status
//   kConfirm:   (empty), from a key's primary to its other owners before
//               it serves a read without a lease (below)   reply: status
//   kCollect:   tombstones (dht_wire's collect), from their keys' primary:
//               forget them                                         reply: status
// Every reply's payload starts with a u32 status (fox::Error), so that the
// Dht's own answers (kNotFound: no such key) are never confused with Rpc's
// (kNotFound: the node is dead). kBusy means "not the key's primary here":
// the caller retries after its ring has caught up.
//
// Threads (dht.h, "Shards" and "Threads"): a key's requests are served as
// events on its shard's core, the node's on the home core. A write
// replicates the key's state as it is when sent
// (after the apply: that write's or a newer one), so an acknowledged
// write's version or a newer one is on every owner; replicas order states
// by version, whatever their arrival.
#include "fox/ebb/dht.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>

#include "fox/boot_args.h"
#include "fox/clock.h"
#include "fox/core.h"
#include "fox/ebb/dht_hash.h"
#include "fox/ebb/lifetime.h"
#include "fox/ebb/messenger.h"
#include "fox/ebb/rpc.h"
#include "fox/event.h"
#include "fox/event_mutex.h"
#include "fox/future.h"
#include "fox/log.h"
#include "fox/net/wire.h"
#include "internal.h"
#include "fox/timer.h"

namespace fox::ebb {
namespace {
// (3 was a delete, before deletes became writes of mode kDelete.)
enum : uint16_t {
  kGet = 1,
  kWrite = 2,
  kReplicate = 4,
  kFlush = 5,
  kCount = 6,
  kJoin = 7,
  kJoinReady = 8,
  kJoinSwitch = 9,
  kCollect = 10,
  kConfirm = 11
};
constexpr uint64_t kSwitched = ~uint64_t(0);  // ready_: the member routes by a ring with the joiner
constexpr uint64_t kRetryNs = 20'000'000;     // between attempts while rings disagree
constexpr size_t kRebuildWindow = 32;         // copies in flight per rebuild
constexpr size_t kCollectBatch = 256;         // tombstones per kCollect

uint64_t HashOf(const std::string& key) { return DhtKeyHash(key.data(), key.size()); }
// Whether `key` belongs to shard `shard` (a request for another shard's key
// is malformed: shards hold their own keys only).
bool InShard(const std::string& key, int shard) { return Dht::ShardOf(HashOf(key)) == shard; }

// A ring's name in joins: its members (FNV-1a), the same on every node that
// computed it, whatever the epoch its changes gave it there.
uint64_t Tag(const DhtRing& ring) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (NodeId n : ring.nodes()) {
    for (int i = 0; i < 4; ++i) h = (h ^ ((n >> (8 * i)) & 0xff)) * 0x100000001b3ull;
  }
  return h == kSwitched ? h - 1 : h;
}

std::vector<uint8_t> TagBytes(uint64_t tag) {
  std::vector<uint8_t> b(8);
  net::wire::StoreLe<uint64_t>(b.data(), tag);
  return b;
}

// A kReplicate body: the sender's ring epoch and the key's state.
std::vector<uint8_t> ReplicateBody(const std::string& key, const DhtEntry& entry, uint64_t epoch) {
  std::vector<uint8_t> state = dht_wire::EncodeReplicate(key, entry, clock::NowNs());
  std::vector<uint8_t> body(8 + state.size());
  net::wire::StoreLe<uint64_t>(body.data(), epoch);
  std::copy(state.begin(), state.end(), body.begin() + 8);
  return body;
}

// kJoin's answer after the status: u64 epoch, u32 count, the members.
std::vector<uint8_t> EncodeRing(const DhtRing& ring) {
  std::vector<uint8_t> b = TagBytes(ring.epoch());
  b.resize(12 + 4 * ring.nodes().size());
  net::wire::StoreLe<uint32_t>(b.data() + 8, uint32_t(ring.nodes().size()));
  for (size_t i = 0; i < ring.nodes().size(); ++i) net::wire::StoreLe<uint32_t>(b.data() + 12 + 4 * i, ring.nodes()[i]);
  return b;
}

// EncodeRing's bytes back; false if malformed.
bool DecodeRing(const uint8_t* data, size_t length, uint64_t* epoch, std::vector<NodeId>* nodes) {
  if (length < 12) return false;
  uint32_t count = net::wire::Load32(data + 8);
  if (count > 4096 || length != 12 + 4 * size_t(count)) return false;
  *epoch = net::wire::Load64(data);
  nodes->resize(count);
  for (uint32_t i = 0; i < count; ++i) (*nodes)[i] = net::wire::Load32(data + 12 + 4 * i);
  return true;
}

std::vector<uint8_t> ReplyBytes(Error status, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> reply(4 + payload.size());
  net::wire::StoreLe<uint32_t>(reply.data(), uint32_t(status));
  std::copy(payload.begin(), payload.end(), reply.begin() + 4);
  return reply;
}

void Answer(NodeId to, uint64_t id, Error status, const std::vector<uint8_t>& payload = {}) {
  std::vector<uint8_t> reply = ReplyBytes(status, payload);
  (void)Rpc::Reply(to, id, reply.data(), reply.size());  // kNotFound: the client died; nobody waits
}

bool KeyOk(const std::string& key) { return !key.empty() && key.size() <= kDhtMaxKey; }

// The Dht's status in a reply: Rpc's error if the call failed, kCorrupt if
// there is none.
Error StatusOf(const Result<Rpc::Bytes>& r) {
  if (!r.ok()) return r.error();
  const Rpc::Bytes& bytes = r.value();
  return bytes.size() >= 4 ? Error(net::wire::Load32(bytes.data())) : Error::kCorrupt;
}

// Waits (sleeping the event) until `done` or `deadline_ns`; true if done.
template <class F>
bool SleepUntil(F done, uint64_t deadline_ns) {
  while (!done()) {
    if (clock::NowNs() >= deadline_ns) return false;
    timer::Sleep(kRetryNs);
  }
  return true;
}
// What a write's caller gets: the version, and the item where the mode
// answers with it (DhtWriteAnswersItem).
Dht::Item AnswerOf(const DhtWrite& write, const DhtEntry& stored) {
  return DhtWriteAnswersItem(write.mode) ? Dht::Item{stored.value, stored.flags, stored.version}
                                         : Dht::Item{{}, 0, stored.version};
}
}  // namespace

// How the shard's own core waits for its items lock: spinning, for it must
// not let its other events run between what it checked and what it writes
// (the lock's other holders are writes from other cores and stats, one
// short section each). Other cores may block (EventMutex).
constexpr auto kOnShardCore = EventMutex::Wait::kSpin;

// A shard (dht.h, "Shards"): touched only by events on its core, but for
// its counters (lock).
struct Dht::Shard {
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
  RingCopy rings;                                    // Renew renews it
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
                                               &Dht::Stats::collected,
                                               &Dht::Stats::leases_renewed,
                                               &Dht::Stats::leases_refused,
                                               &Dht::Stats::shared_gets,
                                               &Dht::Stats::shared_writes};
static_assert(sizeof(kCounters) / sizeof(kCounters[0]) * sizeof(uint64_t) == sizeof(Dht::Stats),
              "a counter of Dht::Stats is missing from kCounters");
}  // namespace

namespace {
int ServingCores() {
  int kernel = std::max(1, core::KernelCores());
  return int(std::clamp<uint64_t>(BootArgNumber("fox.dht_cores", uint64_t(kernel)), 1, uint64_t(kernel)));
}
}  // namespace

Dht::Dht() : core_(core::Current()), serving_cores_(ServingCores()) {
  (void)Rpc::Get()->pending();  // constructs the Rpc Ebb here: replies need it
  auto serve = [this](NodeId from, uint16_t handler, const uint8_t* data, size_t length) {
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
    auto serve_shard = [this, shard](NodeId from, uint16_t handler, const uint8_t* data, size_t length) {
      ServeShard(*shard, from, handler, data, length);
    };
    if (auto r = Messenger::Get()->ListenAny(kDhtShardIds[i], serve_shard, shard->core); !r.ok()) {
      LOG_ERROR("Dht: shard %d cannot receive messages: %s", i, ErrorName(r.error()));
    }
  }
  constructed_.store(this, std::memory_order_release);
}

Dht::~Dht() {
  constructed_.store(nullptr, std::memory_order_release);
  if (subscription_ != 0) am::StopPeerState(subscription_);
  Messenger::Get()->StopListeningAny(kDhtId);
  for (EbbId id : kDhtShardIds) Messenger::Get()->StopListeningAny(id);
}

void Dht::SetRingsLocked(std::shared_ptr<const DhtRing> ring, std::shared_ptr<const DhtRing> target) {
  ring_ = std::move(ring);
  target_ = std::move(target);
  ring_generation_.fetch_add(1, std::memory_order_release);
}

const Dht::RingCopy& Dht::Renew(RingCopy& copy) {
  uint64_t g = ring_generation_.load(std::memory_order_acquire);
  if (copy.generation == g) return copy;
  std::shared_ptr<const DhtRing> ring, target;
  {
    SpinGuard guard(lock_);
    ring = ring_;
    target = target_;
    g = ring_generation_.load(std::memory_order_relaxed);
  }
  copy.ring = std::move(ring);  // the old ones are released outside the lock
  copy.target = std::move(target);
  copy.generation = g;
  return copy;
}

void Dht::OnEveryShard(Function<void(Shard&)> work) {
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

void Dht::SetLimit(size_t max_bytes) {
  OnEveryShard([max_bytes](Shard& s) {
    EventMutexGuard g(s.items_lock, kOnShardCore);
    s.items.set_limit(max_bytes);
  });
}

Result<void> Dht::Start(const RingConfig& config, std::vector<NodeId> members, size_t max_bytes) {
  if (Ring()) return Error::kAlreadyExists;
  NodeId self = am::Self();
  if (members.empty()) {
    members = am::Peers();
    if (std::find(members.begin(), members.end(), self) == members.end()) members.push_back(self);
  }
  if (std::find(members.begin(), members.end(), self) == members.end()) return Error::kInvalidArgument;
  auto ring = DhtRing::Create(config, members);
  if (!ring.ok()) return ring.error();
  auto shared = std::make_shared<const DhtRing>(std::move(*ring));
  SetLimit(max_bytes);
  {
    SpinGuard g(lock_);
    SetRingsLocked(shared, nullptr);
  }
  FollowDeaths(members);
  LOG_INFO("dht: started on %zu nodes, r = %u, %d shards on %d cores", members.size(), config.replication, kShards,
           std::min(kShards, serving_cores_));
  return Ok();
}
void Dht::FollowDeaths(const std::vector<NodeId>& members) {
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

// ---- joins (dht.h, "Joins")

Result<void> Dht::Join(const RingConfig& config, std::vector<NodeId> members, uint64_t timeout_ms, size_t max_bytes) {
  if (Ring()) return Error::kAlreadyExists;
  NodeId self = am::Self();
  if (members.empty() || std::find(members.begin(), members.end(), self) != members.end()) {
    return Error::kInvalidArgument;
  }
  auto ring = DhtRing::Create(config, members);
  if (!ring.ok()) return ring.error();
  auto settled = std::make_shared<const DhtRing>(std::move(*ring));
  auto target = settled->WithNode(self);
  if (!target.ok()) return target.error();
  auto shared_target = std::make_shared<const DhtRing>(std::move(*target));
  SetLimit(max_bytes);
  {
    SpinGuard g(lock_);
    SetRingsLocked(settled, shared_target);
  }
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
void Dht::AskToJoin() {
  uint64_t generation = ++ask_generation_;
  std::set<NodeId> answered;
  for (;;) {
    if (!joining_ || generation != ask_generation_) return;  // done, or a newer round asks
    auto ring = Ring();
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

void Dht::ServeJoin(NodeId from, uint64_t id) {
  auto ring = Ring();
  if (!ring) return Answer(from, id, Error::kBusy);
  std::vector<uint8_t> mine = EncodeRing(*ring);  // the joiner routes by it
  if (ring->Contains(from)) return Answer(from, id, Error::kAlreadyExists, mine);
  std::shared_ptr<const DhtRing> target;
  {
    SpinGuard g(lock_);
    target = target_;
  }
  if (target && !target->Contains(from)) return Answer(from, id, Error::kBusy);  // another joiner's
  if (!target) {
    auto next = ring->WithNode(from);
    if (!next.ok()) return Answer(from, id, next.error());
    target = std::make_shared<const DhtRing>(std::move(*next));
    SpinGuard g(lock_);
    SetRingsLocked(ring_, target);
  }
  LOG_INFO("dht: node %u joins: streaming its partitions", from);
  Answer(from, id, Error::kOk, mine);
  Stream(ring, target);
}

// A member (home core): from now on every write goes to `target`'s owners
// too (Replicate); copies what it is the source of, then tells the joiner.
void Dht::Stream(std::shared_ptr<const DhtRing> settled, std::shared_ptr<const DhtRing> target) {
  uint64_t copied = Rebuild(settled, target, "stream");
  {
    SpinGuard g(lock_);
    stats_.streamed += copied;
    if (target_ != target) return;  // replaced meanwhile (a death, a switch): its own stream says ready
  }
  std::vector<uint8_t> tag = TagBytes(Tag(*target));
  for (NodeId joiner : target->nodes()) {
    if (settled->Contains(joiner)) continue;
    (void)Rpc::Get()->Call(joiner, kDhtId, kJoinReady, tag.data(), tag.size()).Block();
  }
}

void Dht::ServeJoinReady(NodeId from, uint64_t id, const uint8_t* body, size_t length) {
  if (length != 8) return Answer(from, id, Error::kInvalidArgument);
  ready_[from] = net::wire::Load64(body);
  Answer(from, id, Error::kOk);
  MaybeSwitch();
}

void Dht::MaybeSwitch() {
  if (!joining_ || switching_) return;
  std::shared_ptr<const DhtRing> ring, target;
  {
    SpinGuard g(lock_);
    ring = ring_;
    target = target_;
  }
  if (!ring || !target) return;
  uint64_t tag = Tag(*target);
  for (NodeId n : ring->nodes()) {
    auto r = ready_.find(n);
    if (r == ready_.end() || (r->second != tag && r->second != kSwitched)) return;
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

void Dht::ServeJoinSwitch(NodeId from, uint64_t id, const uint8_t* body, size_t length) {
  if (length != 8) return Answer(from, id, Error::kInvalidArgument);
  std::shared_ptr<const DhtRing> target;
  {
    SpinGuard g(lock_);
    target = target_;
  }
  // Another target here (a death the joiner has not seen yet): the joiner
  // asks again for the one they will agree on.
  if (!target || Tag(*target) != net::wire::Load64(body)) return Answer(from, id, Error::kBusy);
  Switch(target);
  Answer(from, id, Error::kOk);
}

// Routes by `target` from now on and drops what this node no longer owns.
void Dht::Switch(std::shared_ptr<const DhtRing> target) {
  {
    SpinGuard g(lock_);
    SetRingsLocked(target, nullptr);
    ++stats_.joins;
  }
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

std::vector<NodeId> Dht::ReplicasOf(Shard& s, uint64_t key_hash) { return OtherOwners(Renew(s.rings), key_hash); }

std::vector<NodeId> Dht::OtherOwners(const RingCopy& rings, uint64_t key_hash) {
  std::vector<NodeId> out;
  NodeId self = am::Self();
  if (!rings.target && rings.ring && rings.ring->nodes().size() == 1 && rings.ring->nodes()[0] == self) return out;
  for (const auto* r : {rings.ring.get(), rings.target.get()}) {
    if (r == nullptr) continue;
    for (NodeId n : r->OwnersOf(r->PartitionOf(key_hash))) {
      if (n != self && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
    }
  }
  return out;
}

// The joiner: its rings become the members' (their epoch: ring changes
// count from it alike on every node, ServeReplicate compares epochs; their
// members: the joiner may have known only one). True if they changed.
bool Dht::TakeRing(uint64_t epoch, std::vector<NodeId> nodes) {
  SpinGuard g(lock_);
  if (!ring_ || !target_) return false;
  std::sort(nodes.begin(), nodes.end());
  if (ring_->epoch() == epoch && ring_->nodes() == nodes) return false;
  if (std::find(nodes.begin(), nodes.end(), am::Self()) != nodes.end()) return false;
  auto settled = DhtRing::Create(ring_->config(), nodes, epoch);
  if (!settled.ok()) return false;
  auto target = settled->WithNode(am::Self());
  if (!target.ok()) return false;
  SetRingsLocked(std::make_shared<const DhtRing>(std::move(*settled)),
                 std::make_shared<const DhtRing>(std::move(*target)));
  return true;
}

bool Dht::HoldsCopy(const std::string& key) {
  auto done = std::make_shared<Promise<bool>>();
  auto future = done->GetFuture();
  Shard* s = shards_[ShardOf(HashOf(key))].get();
  event::SpawnRemote(s->core, [s, key, done] {
    SharedRead reading;
    done->SetValue(s->shared_items().Find(key, clock::NowNs()) != nullptr);
  });
  return future.Block();
}

std::shared_ptr<const DhtRing> Dht::Ring() const {
  SpinGuard g(lock_);
  return ring_;
}

uint64_t Dht::epoch() const {
  auto ring = Ring();
  return ring ? ring->epoch() : 0;
}

std::vector<NodeId> Dht::OwnersOf(const std::string& key) const {
  auto ring = Ring();
  if (!ring) return {};
  auto owners = ring->OwnersOf(ring->PartitionOf(HashOf(key)));
  return {owners.begin(), owners.end()};
}

std::vector<NodeId> Dht::members() const {
  auto ring = Ring();
  return ring ? ring->nodes() : std::vector<NodeId>{};
}

Dht::Stats Dht::stats() const {
  Stats out;
  {
    SpinGuard g(lock_);
    out = stats_;
  }
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

std::vector<uint64_t> Dht::CoreLoad() const {
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

void Dht::StartCollecting(Shard& s) {
  if (s.Tombstones() != 0 && !s.collecting) {
    s.collecting = true;
    event::Spawn([this, &s] { CollectTombstones(s); });
  }
}

void Dht::SetTombstoneGrace(uint64_t ns) { grace_ns_.store(std::max<uint64_t>(ns, 1'000'000)); }

// ---- tombstones

// While this node holds tombstones: every period, notes how far the
// tombstones' numbering has gone (a mark); the tombstones numbered before
// a mark at least the grace old are old, and go to CollectRound.
void Dht::CollectTombstones(Shard& s) {
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
void Dht::CollectRound(Shard& s, std::vector<DhtItems::Tombstone> old) {
  // At rest: no join (a joiner has a target too) and no rebuild.
  std::shared_ptr<const DhtRing> ring = RingAtRest();
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
      bool collect =
          AllAcknowledge(owners, kDhtShardIds[s.index], kCollect, body, Rpc::kDefaultTimeoutMs) && RingAtRest() == ring;
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

std::shared_ptr<const DhtRing> Dht::RingAtRest() const {
  SpinGuard g(lock_);
  return target_ == nullptr && stats_.rebuilds_running == 0 ? ring_ : nullptr;
}

bool Dht::AllAcknowledge(const std::vector<NodeId>& nodes, EbbId ebb, uint16_t handler,
                         const std::vector<uint8_t>& body, uint64_t timeout_ms) {
  std::vector<Future<Result<Rpc::Bytes>>> calls;
  for (NodeId n : nodes) calls.push_back(Rpc::Get()->Call(n, ebb, handler, body.data(), body.size(), timeout_ms));
  bool all = true;
  for (auto& call : calls) all &= StatusOf(call.Block()) == Error::kOk;
  return all;
}

void Dht::ServeCollect(Shard& s, const Caller& caller, const uint8_t* body, size_t length) {
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

bool Dht::Primary(Shard& s, uint64_t key_hash) {
  const RingCopy& rings = Renew(s.rings);
  return rings.ring && rings.ring->PrimaryOf(key_hash) == am::Self();
}

// ---- client side

Result<std::vector<uint8_t>> Dht::Call(uint64_t key_hash, uint16_t handler, const std::vector<uint8_t>& body,
                                       uint64_t rpc_timeout_ms) {
  uint64_t deadline = clock::NowNs() + kRouteTimeoutMs * 1'000'000;
  bool retried_dead = false;
  for (bool first = true;; first = false) {
    if (!first) {
      SpinGuard g(lock_);
      ++stats_.retries;
    }
    const DhtRing* ring = CallersRing();
    if (!ring || ring->nodes().empty()) return Error::kBusy;
    NodeId primary = ring->PrimaryOf(key_hash);
    auto reply = primary == am::Self() ? CallLocal(key_hash, handler, body)
                                       : Rpc::Get()
                                             ->Call(primary, kDhtShardIds[ShardOf(key_hash)], handler, body.data(),
                                                    body.size(), rpc_timeout_ms)
                                             .Block();
    if (!reply.ok()) {
      if (reply.error() != Error::kNotFound) return reply.error();
      if (am::State(primary) != am::PeerState::kDead) {
        // Not joined yet (Rpc refuses nodes it has not seen alive).
        if (clock::NowNs() >= deadline) return Error::kTimedOut;
        timer::Sleep(kRetryNs);
        continue;
      }
      // The primary died before answering: once, on the next primary, when
      // this node's ring has dropped it.
      if (retried_dead) return Error::kNotFound;
      retried_dead = true;
      if (!SleepUntil([&] { return !Ring()->Contains(primary); }, deadline)) return Error::kTimedOut;
      continue;
    }
    if (reply->size() < 4) return Error::kCorrupt;
    auto status = Error(net::wire::Load32(reply->data()));
    if (status == Error::kBusy) {  // not the primary there: its ring differs from ours
      if (clock::NowNs() >= deadline) return Error::kTimedOut;
      timer::Sleep(kRetryNs);
      continue;
    }
    if (status != Error::kOk) return status;
    reply->erase(reply->begin(), reply->begin() + 4);  // in place: no second buffer
    return std::move(*reply);
  }
}

Result<Dht::Item> Dht::Get(const std::string& key) {
  if (!KeyOk(key)) return Error::kInvalidArgument;
  uint64_t hash = HashOf(key);
  if (auto here = GetHere(key, hash)) return std::move(*here);
  auto reply = Call(hash, kGet, std::vector<uint8_t>(key.begin(), key.end()));
  if (!reply.ok()) return reply.error();
  auto entry = dht_wire::DecodeItem(reply->data(), reply->size());
  if (!entry.ok()) return Error::kCorrupt;
  return Item{std::move(entry->value), entry->flags, entry->version};
}

Result<Dht::Item> Dht::Write(DhtWrite write) {
  if (!KeyOk(write.key) || write.value.size() > kDhtMaxValue || write.mode > DhtWrite::kLastMode) {
    return Error::kInvalidArgument;
  }
  // A held request answers within wait_ms (the primary's sweep): the Rpc
  // waits that long and a margin.
  uint64_t rpc_timeout_ms = DhtWriteWaits(write.mode) ? uint64_t(write.wait_ms) + 10'000 : 10'000;
  // Named, so that a new primary answers it from the key's record if the
  // dead one's replicas hold it (exactly once: dht_items.h). `write` is the
  // caller's copy (or what it moved in).
  if (write.request == 0) {
    // (node << 40) | count, the count from this core's block (one shared
    // read-modify-write per kRequestBlock writes).
    PerCore& mine = per_core_[core::Current()];
    if (mine.next_request == mine.end_request) {
      mine.next_request = next_request_.fetch_add(kRequestBlock, std::memory_order_relaxed);
      mine.end_request = mine.next_request + kRequestBlock;
    }
    uint64_t count = mine.next_request++ & ((uint64_t(1) << 40) - 1);
    write.request = (uint64_t(am::Self()) << 40) | (count == 0 ? 1 : count);
  }
  uint64_t hash = HashOf(write.key);
  if (auto here = WriteHere(write, hash)) return std::move(*here);
  auto reply = Call(hash, kWrite, dht_wire::EncodeWrite(write), rpc_timeout_ms);
  if (!reply.ok()) return reply.error();
  if (DhtWriteAnswersItem(write.mode)) {
    auto entry = dht_wire::DecodeItem(reply->data(), reply->size());
    if (!entry.ok()) return Error::kCorrupt;
    return Item{std::move(entry->value), entry->flags, entry->version};
  }
  if (reply->size() != 8) return Error::kCorrupt;
  return Item{{}, 0, net::wire::Load64(reply->data())};
}

Result<uint64_t> Dht::Put(DhtWrite write) {
  auto item = Write(std::move(write));
  if (!item.ok()) return item.error();
  return item->cas;
}

Result<uint64_t> Dht::Set(const std::string& key, const std::string& value, uint32_t flags, uint32_t ttl_s) {
  DhtWrite w;
  w.key = key;
  w.value = value;
  w.flags = flags;
  w.ttl_s = ttl_s;
  return Put(std::move(w));
}

namespace {
Result<uint64_t> CountOf(Result<Dht::Item> item) {
  if (!item.ok()) return item.error();
  uint64_t n = 0;
  if (!DhtParseCounter(item->value, &n)) return Error::kCorrupt;
  return n;
}
}  // namespace

Result<uint64_t> Dht::Add(const std::string& key, uint64_t delta) {
  DhtWrite w;
  w.mode = DhtWrite::Mode::kIncr;
  w.key = key;
  w.delta = delta;
  w.create = true;
  w.initial = delta;
  return CountOf(Write(w));
}

Result<uint64_t> Dht::Take(const std::string& key, uint64_t n, uint32_t wait_ms) {
  DhtWrite w;
  w.mode = DhtWrite::Mode::kTake;
  w.key = key;
  w.delta = n;
  w.wait_ms = wait_ms;
  return CountOf(Write(w));
}

Result<Dht::Item> Dht::WaitFor(const std::string& key, uint64_t at_least, uint32_t wait_ms) {
  DhtWrite w;
  w.mode = DhtWrite::Mode::kWait;
  w.key = key;
  w.delta = at_least;
  w.wait_ms = wait_ms;
  return Write(w);
}

Result<void> Dht::Delete(const std::string& key) {
  DhtWrite w;
  w.mode = DhtWrite::Mode::kDelete;
  w.key = key;
  auto r = Write(w);
  if (!r.ok()) return r.error();
  return Ok();
}

std::vector<std::vector<uint8_t>> Dht::AskEveryNode(uint16_t handler, const std::vector<uint8_t>& body, size_t* asked,
                                                    Error* last_error) {
  std::vector<std::vector<uint8_t>> answers;
  *asked = 0;
  *last_error = Error::kBusy;
  auto ring = Ring();
  if (!ring) return answers;
  std::vector<Future<Result<Rpc::Bytes>>> calls;
  for (NodeId n : ring->nodes()) calls.push_back(Rpc::Get()->Call(n, kDhtId, handler, body.data(), body.size()));
  *asked = calls.size();
  for (auto& call : calls) {
    auto r = call.Block();
    if (StatusOf(r) == Error::kOk) {
      answers.emplace_back(r->begin() + 4, r->end());
    } else {
      *last_error = r.ok() ? Error::kCorrupt : r.error();
    }
  }
  return answers;
}

Result<size_t> Dht::Flush(uint32_t delay_s) {
  std::vector<uint8_t> body(4);
  net::wire::StoreLe<uint32_t>(body.data(), delay_s);
  size_t asked;
  Error last;
  auto answers = AskEveryNode(kFlush, body, &asked, &last);
  if (answers.empty()) return last;
  return answers.size();
}

Result<Dht::Census> Dht::Count() {
  Census census;
  Error last;
  auto answers = AskEveryNode(kCount, {}, &census.asked, &last);
  for (const auto& a : answers) {
    if (a.size() != 16) continue;
    census.items += net::wire::Load64(a.data());
    census.bytes += net::wire::Load64(a.data() + 8);
    ++census.nodes;
  }
  if (census.nodes == 0) return answers.empty() ? last : Error::kCorrupt;
  return census;
}

// ---- server side: the node's messages (home core)

void Dht::Serve(NodeId from, uint16_t handler, const uint8_t* data, size_t length) {
  auto request = Rpc::ParseRequest(data, length);
  if (!request) {  // no request id: nothing to answer
    SpinGuard g(lock_);
    ++stats_.bad_requests;
    return;
  }
  switch (handler) {
    case kFlush: return ServeFlush(from, request->id, request->body, request->length);
    case kCount: return ServeCount(from, request->id);
    case kJoin: return ServeJoin(from, request->id);
    case kJoinReady: return ServeJoinReady(from, request->id, request->body, request->length);
    case kJoinSwitch: return ServeJoinSwitch(from, request->id, request->body, request->length);
    case kConfirm:  // a node the transport holds dead gets no answer: its frames are dropped
      return Answer(from, request->id, am::State(from) == am::PeerState::kDead ? Error::kNotFound : Error::kOk);
    default: {
      SpinGuard g(lock_);
      ++stats_.bad_requests;
    }
      Answer(from, request->id, Error::kInvalidArgument);
  }
}

void Dht::ServeFlush(NodeId from, uint64_t id, const uint8_t* body, size_t length) {
  if (length != 4) {
    {
      SpinGuard g(lock_);
      ++stats_.bad_requests;
    }
    return Answer(from, id, Error::kInvalidArgument);
  }
  uint32_t delay_s = net::wire::Load32(body);
  auto flush = [this] {
    OnEveryShard([this](Shard& s) {
      size_t flushed;
      {
        EventMutexGuard g(s.items_lock, kOnShardCore);
        flushed = s.items.Flush();
      }
      StartCollecting(s);
      s.Count(&Stats::flushed, flushed);
    });
  };
  if (delay_s == 0) {
    flush();
  } else {
    event::Spawn([delay_s, flush] {
      timer::Sleep(uint64_t(delay_s) * 1'000'000'000);
      flush();
    });
  }
  Answer(from, id, Error::kOk);
}

void Dht::ServeCount(NodeId from, uint64_t id) {
  auto ring = Ring();
  uint64_t counts[kShards][2] = {};  // items, bytes: each shard writes its own
  if (ring) {
    OnEveryShard([&](Shard& s) {
      uint64_t now = clock::NowNs();
      NodeId self = am::Self();
      EventMutexGuard g(s.items_lock, kOnShardCore);
      s.items.ForEach([&](const std::string& key, const DhtEntry& e) {
        if (!e.live(now) || ring->PrimaryOf(HashOf(key)) != self) return;
        ++counts[s.index][0];
        counts[s.index][1] += key.size() + e.value.size();
      });
    });
  }
  uint64_t items = 0, bytes = 0;
  for (auto& c : counts) {
    items += c[0];
    bytes += c[1];
  }
  std::vector<uint8_t> payload(16);
  net::wire::StoreLe<uint64_t>(payload.data(), items);
  net::wire::StoreLe<uint64_t>(payload.data() + 8, bytes);
  Answer(from, id, Error::kOk, payload);
}

// ---- server side: a key's messages (events on its shard's core)

void Dht::ServeShard(Shard& s, NodeId from, uint16_t handler, const uint8_t* data, size_t length) {
  auto request = Rpc::ParseRequest(data, length);
  if (!request) {  // no request id: nothing to answer
    s.Count(&Stats::bad_requests);
    return;
  }
  ServeKey(s, Caller{from, request->id, nullptr}, handler, request->body, request->length);
}

void Dht::ServeKey(Shard& s, const Caller& caller, uint16_t handler, const uint8_t* body, size_t length) {
  switch (handler) {
    case kGet: return ServeGet(s, caller, body, length);
    case kWrite: return ServeWrite(s, caller, body, length);
    case kReplicate: return ServeReplicate(s, caller, body, length);
    case kCollect: return ServeCollect(s, caller, body, length);
    default: s.Count(&Stats::bad_requests); Reply(caller, Error::kInvalidArgument);
  }
}

void Dht::Reply(const Caller& caller, Error status, const std::vector<uint8_t>& payload) {
  if (caller.local) return caller.local->SetValue(ReplyBytes(status, payload));
  Answer(caller.node, caller.id, status, payload);
}

Result<std::vector<uint8_t>> Dht::CallLocal(uint64_t key_hash, uint16_t handler, const std::vector<uint8_t>& body) {
  Shard& s = *shards_[ShardOf(key_hash)];
  Caller caller{am::Self(), 0, std::make_shared<Promise<Result<std::vector<uint8_t>>>>()};
  auto reply = caller.local->GetFuture();
  // Inline on the shard's core, else there while this event is blocked (the
  // request stays in this frame). A held request is answered later, through
  // the promise.
  event::Delegate(s.core, [&] { ServeKey(s, caller, handler, body.data(), body.size()); });
  return reply.Block();
}

template <class Use>
Error Dht::Look(Shard& s, std::string_view key, uint64_t key_hash, Use&& use) {
  Error status = Error::kOk;
  if (ShardOf(key_hash) != s.index) {
    status = Error::kInvalidArgument;
  } else if (!Primary(s, key_hash)) {
    status = Error::kBusy;
  } else if (!HoldsLease(s, key_hash)) {
    status = Error::kBusy;  // the caller retries: the ring drops a dead owner, or this zombie is fenced
  } else {
    OpenReads(s);
    SharedRead reading;
    const DhtEntry* entry = s.shared_items().FindLive(key, clock::NowNs);
    if (entry == nullptr) {
      status = Error::kNotFound;
    } else {
      use(*entry);
    }
  }
  SpinGuard g(s.lock);
  ++(status == Error::kInvalidArgument ? s.stats.bad_requests
     : status == Error::kBusy          ? s.stats.not_primary
                                       : s.stats.served_gets);
  return status;
}

void Dht::ServeGet(Shard& s, const Caller& caller, const uint8_t* body, size_t length) {
  auto key = dht_wire::DecodeKey(body, length);
  std::vector<uint8_t> item;
  Error status = Error::kInvalidArgument;
  if (key.ok()) {
    status = Look(s, *key, HashOf(*key), [&item](const DhtEntry& entry) { item = dht_wire::EncodeItem(entry); });
  } else {
    s.Count(&Stats::bad_requests);
  }
  Reply(caller, status, item);
}

Dht::Shard* Dht::ShardHere(uint64_t key_hash) {
  const DhtRing* ring = CallersRing();
  if (!ring || ring->nodes().empty() || ring->PrimaryOf(key_hash) != am::Self()) return nullptr;
  return shards_[ShardOf(key_hash)].get();
}

std::optional<Result<Dht::Item>> Dht::Answered(Error status, Item&& item) {
  if (status == Error::kBusy) return std::nullopt;  // the routed path retries as the ring settles
  if (status != Error::kOk) return status;
  return std::move(item);
}

void Dht::OpenReads(Shard& s) {
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

std::optional<Result<Dht::Item>> Dht::ReadShared(Shard& s, const std::string& key) {
  uint64_t generation = s.reads_generation.load(std::memory_order_acquire);
  if (generation != ring_generation_.load(std::memory_order_acquire) ||
      generation != core_rings_[core::Current()].generation) {
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

std::optional<Result<Dht::Item>> Dht::GetHere(const std::string& key, uint64_t key_hash) {
  Shard* here = ShardHere(key_hash);
  if (here == nullptr) return std::nullopt;
  Shard& s = *here;
  if (s.core != core::Current()) {
    if (auto read = ReadShared(s, key)) return read;
  }
  Error status = Error::kOk;
  Item item;
  event::Delegate(s.core, [&] {  // inline on the shard's core, else there while this event is blocked
    status = Look(s, key, key_hash, [&item](const DhtEntry& entry) {
      item = Item{entry.value, entry.flags, entry.version};
    });
  });
  return Answered(status, std::move(item));
}

void Dht::ServeWrite(Shard& s, const Caller& caller, const uint8_t* body, size_t length) {
  auto write = dht_wire::DecodeWrite(body, length);  // a copy: this event blocks below
  if (!write.ok() || !InShard(write->key, s.index)) {
    s.Count(&Stats::bad_requests);
    return Reply(caller, write.ok() ? Error::kInvalidArgument : write.error());
  }
  ApplyWrite(s, caller.node, *write, &caller, [&caller, mode = write->mode](Error status, const DhtEntry* entry) {
    if (status != Error::kOk) return Reply(caller, status);
    if (DhtWriteAnswersItem(mode)) return Reply(caller, Error::kOk, dht_wire::EncodeItem(*entry));
    std::vector<uint8_t> cas(8);
    net::wire::StoreLe<uint64_t>(cas.data(), entry->version);
    Reply(caller, Error::kOk, cas);
  });
}

template <class Answer>
void Dht::ApplyWrite(Shard& s, NodeId from, const DhtWrite& write, const Caller* holder, Answer&& answer) {
  // A dead caller's write (it waited in the mailbox while the transport
  // declared it dead) is never applied: Quiesce. This node is never dead to
  // itself (and its own writes skip the transport's lock).
  if (from != am::Self() && am::State(from) == am::PeerState::kDead) return answer(Error::kNotFound, nullptr);
  // A write that may wait is held in `waiters`, which only this core's
  // writes wake: the other cores' writes end first (WriteShared).
  if (DhtWriteWaits(write.mode)) CloseWrites(s);
  struct InProgress {  // counted until answered (replication included)
    Shard& s;
    NodeId from;
    InProgress(Shard& s_, NodeId f) : s(s_), from(f) { ++s.in_progress[from]; }
    ~InProgress() {
      if (--s.in_progress[from] == 0) s.in_progress.erase(from);
    }
  } in_progress(s, from);
  uint64_t hash = HashOf(write.key);
  if (!Primary(s, hash)) {
    s.Count(&Stats::not_primary);
    return answer(Error::kBusy, nullptr);
  }
  auto applied = [&] {
    EventMutexGuard g(s.items_lock, kOnShardCore);
    return s.items.Write(write, clock::NowNs());
  }();
  if (!applied.ok() && applied.error() == Error::kBusy && DhtWriteWaits(write.mode)) {
    if (write.wait_ms == 0) return answer(Error::kTimedOut, nullptr);
    if (holder == nullptr) return answer(Error::kBusy, nullptr);  // nobody to hold it for: the routed path does
    uint64_t deadline = clock::NowNs() + uint64_t(write.wait_ms) * 1'000'000;
    s.waiters[write.key].push_back(Waiter{*holder, write, deadline});
    s.Count(&Stats::waiting);
    if (!s.sweeping) {
      s.sweeping = true;
      event::Spawn([this, &s] { Sweep(s); });
    }
    return;
  }
  if (!applied.ok()) return answer(applied.error(), nullptr);
  if (write.mode == DhtWrite::Mode::kWait) return answer(Error::kOk, &*applied);
  if (s.waiters.empty()) OpenWrites(s);
  if (applied->tombstone) StartCollecting(s);  // only a delete adds one
  Wake(s, write.key);
  s.Count(write.mode == DhtWrite::Mode::kDelete ? &Stats::served_deletes : &Stats::served_writes);
  if (!Replicate(s, write.key, hash)) return answer(Error::kTimedOut, nullptr);
  answer(Error::kOk, &*applied);
}

void Dht::OpenWrites(Shard& s) {
  uint64_t generation = s.rings.generation;  // Primary renewed it for this write
  if (s.writes_generation.load(std::memory_order_relaxed) == generation) return;
  EventMutexGuard g(s.items_lock, kOnShardCore);
  s.writes_generation.store(generation, std::memory_order_release);
}

void Dht::CloseWrites(Shard& s) {
  if (s.writes_generation.load(std::memory_order_relaxed) == ~uint64_t(0)) return;
  EventMutexGuard g(s.items_lock, kOnShardCore);  // a write in progress on another core ends first
  s.writes_generation.store(~uint64_t(0), std::memory_order_relaxed);
}

std::optional<Result<Dht::Item>> Dht::WriteShared(Shard& s, const DhtWrite& write, uint64_t key_hash) {
  uint64_t generation = s.writes_generation.load(std::memory_order_acquire);
  const RingCopy& rings = core_rings_[core::Current()];  // ShardHere renewed it
  if (generation != rings.generation || write.mode == DhtWrite::Mode::kDelete || !rings.ring ||
      !OtherOwners(rings, key_hash).empty()) {  // a key with replicas is written by its shard's core
    return std::nullopt;
  }
  std::optional<Result<DhtEntry>> applied;
  {
    EventMutexGuard g(s.items_lock);
    if (s.writes_generation.load(std::memory_order_relaxed) != generation ||
        ring_generation_.load(std::memory_order_acquire) != generation) {
      return std::nullopt;  // closed, or the rings moved: the shard's core decides
    }
    applied.emplace(s.items.Write(write, clock::NowNs()));
  }
  if (!applied->ok()) return Answered(applied->error(), Item{});
  detail::BumpOwn(per_core_[core::Current()].writes);
  return AnswerOf(write, **applied);
}

std::optional<Result<Dht::Item>> Dht::WriteHere(const DhtWrite& write, uint64_t key_hash) {
  Shard* here = DhtWriteWaits(write.mode) ? nullptr : ShardHere(key_hash);
  if (here == nullptr) return std::nullopt;
  Shard& s = *here;
  if (s.core != core::Current()) {
    if (auto done = WriteShared(s, write, key_hash)) return done;
  }
  Error status = Error::kOk;
  Item item;
  event::Delegate(s.core, [&] {  // inline on the shard's core, else there while this event is blocked
    ApplyWrite(s, am::Self(), write, nullptr, [&](Error st, const DhtEntry* entry) {
      status = st;
      if (st != Error::kOk) return;
      item = AnswerOf(write, *entry);
    });
  });
  return Answered(status, std::move(item));
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
bool Dht::HoldsLease(Shard& s, uint64_t key_hash) {
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

bool Dht::Replicate(Shard& s, const std::string& key, uint64_t key_hash) {
  uint64_t deadline = 0;  // from the first round that has replicas
  for (;;) {
    std::vector<NodeId> replicas = ReplicasOf(s, key_hash);
    if (replicas.empty()) return true;
    if (deadline == 0) deadline = clock::NowNs() + kRouteTimeoutMs * 1'000'000;
    // The key's current state: an item (live or expired) or a tombstone.
    auto state = s.StateOf(key, s.rings.ring->epoch());
    if (!state) return true;  // nothing to copy (cannot happen after a write)
    std::vector<Future<Result<Rpc::Bytes>>> calls;
    for (NodeId n : replicas) {
      calls.push_back(Rpc::Get()->Call(n, kDhtShardIds[s.index], kReplicate, state->data(), state->size()));
    }
    std::vector<NodeId> dead;
    bool failed = false;
    for (size_t i = 0; i < calls.size(); ++i) {
      auto r = calls[i].Block();
      if (StatusOf(r) == Error::kOk) continue;
      if (!r.ok() && r.error() == Error::kNotFound && am::State(replicas[i]) == am::PeerState::kDead) {
        dead.push_back(replicas[i]);
      } else {
        failed = true;
      }
    }
    if (failed) return false;
    if (dead.empty()) return true;
    // A replica died: once the ring has dropped it, the new owners get the state.
    bool dropped = SleepUntil(
        [&] {
          auto ring = Ring();
          return std::none_of(dead.begin(), dead.end(), [&](NodeId n) { return ring->Contains(n); });
        },
        deadline);
    if (!dropped) return false;
    s.Count(&Stats::resent);
  }
}

void Dht::ServeReplicate(Shard& s, const Caller& caller, const uint8_t* body, size_t length) {
  NodeId from = caller.node;
  if (am::State(from) == am::PeerState::kDead) return Reply(caller, Error::kNotFound);  // its write never counts
  auto state = length < 8 ? Result<dht_wire::Replicate>(Error::kInvalidArgument)
                          : dht_wire::DecodeReplicate(body + 8, length - 8, clock::NowNs());
  bool ok = state.ok() && InShard(state->key, s.index);
  bool applied = false;
  if (ok) {
    const auto& [generation, ring, target] = Renew(s.rings);
    uint64_t hash = HashOf(state->key);
    auto owns = [&](const std::shared_ptr<const DhtRing>& r) { return r && r->Owns(am::Self(), r->PartitionOf(hash)); };
    if (ring && ring->epoch() > net::wire::Load64(body) && !owns(ring) && !owns(target)) {
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

// ---- held takes and waits (the key's shard)

void Dht::Wake(Shard& s, const std::string& key) {
  if (s.waiters.empty()) return;  // after every write: the common case costs no lookup
  auto it = s.waiters.find(key);
  if (it == s.waiters.end()) return;
  std::deque<Waiter>& queue = it->second;
  uint64_t now = clock::NowNs();
  size_t removed = 0;
  for (size_t i = 0; i < queue.size();) {
    if (am::State(queue[i].caller.node) == am::PeerState::kDead) {  // nobody to answer: take nothing for it
      queue.erase(queue.begin() + long(i));
      ++removed;
      continue;
    }
    auto served = [&] {
      EventMutexGuard g(s.items_lock, kOnShardCore);
      return s.items.Write(queue[i].write, now);
    }();
    if (!served.ok() && served.error() == Error::kBusy) {
      ++i;
      continue;
    }
    Waiter done = std::move(queue[i]);
    queue.erase(queue.begin() + long(i));
    ++removed;
    // Answered from an event of its own: answering may block, and the
    // queue must not change under this loop meanwhile.
    event::Spawn([this, &s, done = std::move(done), served = std::move(served)]() mutable {
      if (!served.ok()) return Reply(done.caller, served.error());
      Finish(s, done.caller, done.write, *served);
    });
  }
  if (queue.empty()) s.waiters.erase(it);
  SpinGuard g(s.lock);
  s.stats.waiting -= removed;
}

void Dht::Finish(Shard& s, const Caller& caller, const DhtWrite& write, const DhtEntry& entry) {
  if (write.mode == DhtWrite::Mode::kTake) {
    s.Count(&Stats::served_writes);
    if (!Replicate(s, write.key, HashOf(write.key))) return Reply(caller, Error::kTimedOut);
  }
  Reply(caller, Error::kOk, dht_wire::EncodeItem(entry));
}

void Dht::Sweep(Shard& s) {
  while (!s.waiters.empty()) {
    timer::Sleep(50'000'000);
    uint64_t now = clock::NowNs();
    std::vector<Waiter> late;
    for (auto it = s.waiters.begin(); it != s.waiters.end();) {
      std::deque<Waiter>& queue = it->second;
      for (size_t i = 0; i < queue.size();) {
        if (queue[i].deadline_ns > now) {
          ++i;
          continue;
        }
        late.push_back(std::move(queue[i]));
        queue.erase(queue.begin() + long(i));
      }
      it = queue.empty() ? s.waiters.erase(it) : std::next(it);
    }
    {
      SpinGuard g(s.lock);
      s.stats.waiting -= late.size();
      s.stats.waits_timed_out += late.size();
    }
    for (const Waiter& w : late) Reply(w.caller, Error::kTimedOut);  // may block: after the loop
  }
  s.sweeping = false;
}

// ---- failures

void Dht::Quiesce(NodeId origin) {
  OnEveryShard([origin](Shard& s) {
    while (s.in_progress.count(origin) != 0) timer::Sleep(1'000'000);  // its writes block on replicas meanwhile
  });
}

void Dht::OnDeath(NodeId node) {
  std::shared_ptr<const DhtRing> before, target;
  {
    SpinGuard g(lock_);
    before = ring_;
    target = target_;
  }
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
  {
    SpinGuard g(lock_);
    SetRingsLocked(after, next_target);
    if (in_ring) ++stats_.rebuilds_running;
  }
  if (!in_ring) {
    LOG_INFO("dht: joining node %u died: the join is over", node);
    return;
  }
  LOG_INFO("dht: node %u died: ring epoch %llu, %zu nodes", node, (unsigned long long)after->epoch(),
           after->nodes().size());
  event::Spawn([this, before, after] {
    uint64_t copied = Rebuild(before, after, "rebuild");
    SpinGuard g(lock_);
    stats_.rebuilt += copied;
    --stats_.rebuilds_running;
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
uint64_t Dht::Rebuild(std::shared_ptr<const DhtRing> before, std::shared_ptr<const DhtRing> after, const char* what) {
  uint64_t copied[kShards] = {}, failed[kShards] = {};  // each shard writes its own
  OnEveryShard([&](Shard& s) { copied[s.index] = RebuildShard(s, *before, *after, &failed[s.index]); });
  uint64_t copies = 0, failures = 0;
  for (int i = 0; i < kShards; ++i) {
    copies += copied[i];
    failures += failed[i];
  }
  {
    SpinGuard g(lock_);
    stats_.rebuild_failures += failures;
  }
  LOG_INFO("dht: %s for ring epoch %llu: %llu copies to new owners, %llu failed", what,
           (unsigned long long)after->epoch(), (unsigned long long)copies, (unsigned long long)failures);
  return copies;
}

uint64_t Dht::RebuildShard(Shard& s, const DhtRing& before, const DhtRing& after, uint64_t* failures) {
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

}  // namespace fox::ebb
