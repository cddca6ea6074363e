// Node: this node's part of the Dht, behind the Dht Ebb's façade (dht.h
// says what it does; this header says where each part lives). Internal to
// ebb/. Its methods are split by concept over this folder:
//   node.cc        construction, Start, the rings' copies, shards at once, stats
//   client.cc      the calling side: routing a call to the key's primary, retries
//   serve.cc       the serving side: the node's and a shard's messages, gets and
//                  writes at the primary, and calls whose primary is this node
//   local.cc       a get or write served on the calling core from another
//                  core's shard (no hop), and the read leases that allow it
//   replication.cc a write's copies to the key's other owners, and their side
//   rebuild.cc     deaths, and copying partitions to their new owners
//   join.cc        a node joining a running Dht (the stream and the switch)
//   waits.cc       takes and waits held at the primary
//   tombstones.cc  forgetting old deletes everywhere
// protocol.h is the wire between nodes, rings.h the rings, shard.h a shard.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "fox/core.h"
#include "fox/ebb/dht.h"
#include "fox/function.h"
#include "fox/spinlock.h"
#include "fox/thread_annotations.h"
#include "rings.h"
#include "shard.h"

namespace fox::ebb::dht {

class Node {
 public:
  using Item = Dht::Item;
  using Stats = Dht::Stats;
  using Census = Dht::Census;
  static constexpr int kShards = Dht::kShards;

  // Listens for the node's messages on the calling core (its home core) and
  // for each shard's on its core. Event context.
  Node();
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // dht.h's API, one for one.
  Result<void> Start(const RingConfig& config, std::vector<NodeId> members, size_t max_bytes);
  Result<void> Join(const RingConfig& config, std::vector<NodeId> members, uint64_t timeout_ms, size_t max_bytes);
  bool HoldsCopy(const std::string& key);
  Result<Item> Get(const std::string& key);
  Result<Item> Write(DhtWrite write);
  Result<size_t> Flush(uint32_t delay_s);
  Result<Census> Count();
  void Quiesce(NodeId origin);
  void SetTombstoneGrace(uint64_t ns);
  std::vector<NodeId> OwnersOf(const std::string& key) const;
  std::vector<NodeId> members() const;
  uint64_t epoch() const;
  Stats stats() const;
  std::vector<uint64_t> CoreLoad() const;

 private:
  // The core that serves shard `shard` on this node: shards lie on the
  // first fox.dht_cores kernel cores (default: all of them), in turn.
  int ShardCore(int shard) const { return shard % serving_cores_; }
  Shard& ShardFor(uint64_t key_hash) { return *shards_[Dht::ShardOf(key_hash)]; }
  // Counts on the node's own counters (the shards count theirs).
  void Count(uint64_t Stats::*counter, uint64_t n = 1);

  // ---- node.cc
  // The ring as the calling core last copied it; null before Start. Valid
  // until the calling event blocks.
  const DhtRing* CallersRing() { return rings_.Renew(core_rings_[core::Current()]).ring.get(); }
  // Every shard's byte limit: `max_bytes` for the node's items together.
  void SetLimit(size_t max_bytes);
  // Runs `work(shard)` on every shard's core at once and returns when all
  // have. Event context.
  void OnEveryShard(Function<void(Shard&)> work);
  void FollowDeaths(const std::vector<NodeId>& members);

  // ---- client.cc
  // Sends `body` under `handler` to the primary of `key_hash` (its shard's
  // Ebb there) and returns the reply's payload (after its status),
  // retrying while rings disagree and once after the primary died.
  Result<std::vector<uint8_t>> Call(uint64_t key_hash, HandlerId handler, const std::vector<uint8_t>& body,
                                    uint64_t rpc_timeout_ms = 10'000);
  // Sends `body` to every node of the ring; the replies (their payloads
  // after an ok status) and how many nodes there were.
  std::vector<std::vector<uint8_t>> AskEveryNode(HandlerId handler, const std::vector<uint8_t>& body, size_t* asked,
                                                 Error* last_error);
  // Sends `body` under `handler` to Ebb `ebb` on each of `nodes`; true if
  // all answer kOk. Blocks.
  bool AllAcknowledge(const std::vector<NodeId>& nodes, EbbId ebb, HandlerId handler, const std::vector<uint8_t>& body,
                      uint64_t timeout_ms);

  // ---- serve.cc
  void Serve(NodeId from, HandlerId handler, const uint8_t* data, size_t length);
  void ServeShard(Shard& s, NodeId from, HandlerId handler, const uint8_t* data, size_t length);
  void ServeKey(Shard& s, const Caller& caller, HandlerId handler, const uint8_t* body, size_t length);
  void ServeGet(Shard& s, const Caller& caller, const uint8_t* body, size_t length);
  void ServeWrite(Shard& s, const Caller& caller, const uint8_t* body, size_t length);
  void ServeFlush(NodeId from, uint64_t id, const uint8_t* body, size_t length);
  void ServeCount(NodeId from, uint64_t id);
  // Answers `caller`: status, then `payload` (Rpc::Reply, or its promise).
  static void Reply(const Caller& caller, Error status, const std::vector<uint8_t>& payload = {});
  // Whether this node is the primary of `key_hash` in the shard's ring.
  bool Primary(Shard& s, uint64_t key_hash);
  // A get of `key` (hash `key_hash`) served by shard `s`: kOk after
  // `use(entry)` (under a SharedRead: a write from another core may replace
  // the entry meanwhile; `use` must not block), kNotFound, kBusy (not the
  // key's primary here, or a read lease not held) or kInvalidArgument (not
  // this shard's key); counted. May block (a lease's renewal). Event
  // context, the shard's core.
  template <class Use>
  Error Look(Shard& s, std::string_view key, uint64_t key_hash, Use&& use);
  // ServeWrite's work once the write is decoded and in shard `s`: applies
  // `write` from `from`, replicates it, and calls `answer(status, entry)`
  // once (entry: the stored item, on kOk). A write that must wait is held
  // for `holder` (answered later), or answered kBusy without one. May block.
  template <class Answer>
  void ApplyWrite(Shard& s, NodeId from, const DhtWrite& write, const Caller* holder, Answer&& answer);
  // A request for a key whose primary is this node: served by its shard
  // directly (inline if the calling core is the shard's), no transport and
  // no Rpc. Returns the reply as Rpc would.
  Result<std::vector<uint8_t>> CallLocal(uint64_t key_hash, HandlerId handler, const std::vector<uint8_t>& body);
  // The shard of `key_hash` when this node is its primary by the calling
  // core's ring, else null.
  Shard* ShardHere(uint64_t key_hash);
  // A get whose primary is this node, by the calling core's ring: served by
  // its shard as CallLocal would, but neither encoded nor decoded and with
  // no promise (the answer is written into the blocked caller's frame).
  // nullopt if the primary is another node or the shard says kBusy (Call
  // then routes and retries). Event context.
  std::optional<Result<Item>> GetHere(const std::string& key, uint64_t key_hash);
  // The same for a write that cannot be held (DhtWriteWaits: those take
  // the routed path): applied by its shard from `write` in the caller's
  // frame, the item or version answered into it.
  std::optional<Result<Item>> WriteHere(const DhtWrite& write, uint64_t key_hash);
  // GetHere/WriteHere's result from the serve's status.
  static std::optional<Result<Item>> Answered(Error status, Item&& item);

  // ---- local.cc
  // A get served on the calling core from shard `s` of another core while
  // the shard's reads are open (Shard's reads_generation): no hop, no lock.
  // nullopt when they are not (GetHere hops to the shard's core then).
  std::optional<Result<Item>> ReadShared(Shard& s, const std::string& key);
  // The shard's core, serving a get as the key's primary with its read
  // lease held: (re)opens the shard's reads to the other cores, as long as
  // every other node's lease holds.
  void OpenReads(Shard& s);
  // Whether this primary may serve a read of `key_hash` from its copy (read
  // leases: local.cc); asks the other owners when it must. Blocks.
  bool HoldsLease(Shard& s, uint64_t key_hash);
  // A write applied on the calling core to shard `s` of another core while
  // the shard's writes are open (Shard's writes_generation) and the key has
  // no other owner: no hop, the shard's items lock held. nullopt when not
  // (WriteHere hops to the shard's core then). Not kDelete (its tombstone
  // is collected by the shard's core).
  std::optional<Result<Item>> WriteShared(Shard& s, const DhtWrite& write, uint64_t key_hash);
  // The shard's core, having written as the key's primary: opens the
  // shard's writes to the other cores, unless requests wait on its keys.
  // CloseWrites ends them (before a write that may wait); both hold the
  // shard's items lock.
  void OpenWrites(Shard& s);
  static void CloseWrites(Shard& s);

  // ---- replication.cc
  // Owners of the partition of `key_hash` to replicate to: the shard's
  // ring's and, during a join, its target's.
  std::vector<NodeId> ReplicasOf(Shard& s, uint64_t key_hash);
  // Sends the key's current state to every owner but this node; true when
  // all acknowledged (waits for the ring to drop dead replicas and tries
  // the new owners; sends again, to the owners its rings then name, while
  // a replica's rings are newer).
  bool Replicate(Shard& s, const std::string& key, uint64_t key_hash);
  // kReplicate (`write`: a primary's write, fenced by views) and kCopy (a
  // move's copy).
  void ServeReplicate(Shard& s, const Caller& caller, const uint8_t* body, size_t length, bool write);

  // ---- rebuild.cc (home core)
  void OnDeath(NodeId node);
  // Moves data from the settled ring to the goal (the target during a
  // join, else the ring), then reports it; again after failed copies,
  // unless the rings changed meanwhile (a later Move plans again). Blocks.
  void Move();
  // Tells every member and the joiner that this node's transfers of the
  // move from `settled` to `goal` are done, and settles if all are.
  void Report(const DhtRing& settled, const DhtRing& goal);
  void ServeMoved(NodeId from, uint64_t id, const uint8_t* body, size_t length);
  // Adopts a newer settled ring another node reports, or settles the ring
  // once every member reported it from this node's settled ring.
  void TrySettle();
  // Runs this node's transfers of PlanMove(settled, goal), every shard at
  // once; returns how many copies were made and adds the failed ones to
  // *failures. `what` names it in the log (rebuild, stream).
  uint64_t Rebuild(const DhtRing& settled, const DhtRing& goal, const char* what, uint64_t* failures);
  // One shard's part: copies its items of each partition to that
  // partition's `destinations` (indexed by `goal`'s partitions).
  uint64_t RebuildShard(Shard& s, const DhtRing& goal, const std::vector<std::vector<NodeId>>& destinations,
                        uint64_t* failures);

  // ---- join.cc
  // A member takes the joiner into its target and moves data; the joiner's
  // side; the switch.
  void ServeJoin(NodeId from, uint64_t id);
  void ServeJoinSwitch(NodeId from, uint64_t id, const uint8_t* body, size_t length);
  void MaybeSwitch();  // the joiner: every member moved for its target?
  void AskToJoin();    // the joiner
  void Switch(std::shared_ptr<const DhtRing> target);
  // The joiner: its rings become the members' (their epoch and members);
  // true if they changed.
  bool TakeRing(uint64_t epoch, std::vector<NodeId> nodes);

  // ---- waits.cc
  // Holds `waiter` for its key until it can be served or its deadline.
  void Hold(Shard& s, Waiter waiter);
  // Serves the held requests of `key` that can be now (after a write to it).
  void Wake(Shard& s, const std::string& key);
  // Answers a served take or wait: replicates a take first (blocks).
  void Finish(Shard& s, const Caller& caller, const DhtWrite& write, const DhtEntry& entry);
  // Answers held requests past their deadline, every 50 ms while any are held.
  void Sweep(Shard& s);

  // ---- tombstones.cc
  // After a shard's core stored tombstones (a delete, a flush, a replica's
  // copy): starts the shard's collector unless it runs.
  void StartCollecting(Shard& s);
  // A shard's collector, while it holds any, and one primary's round.
  void CollectTombstones(Shard& s);
  void CollectRound(Shard& s, std::vector<DhtItems::Tombstone> old);
  void ServeCollect(Shard& s, const Caller& caller, const uint8_t* body, size_t length);

  int core_;
  int serving_cores_;  // ShardCore
  uint64_t subscription_ = 0;
  std::unique_ptr<Shard> shards_[kShards];
  Rings rings_;
  std::unique_ptr<Rings::Copy[]> core_rings_{new Rings::Copy[core::kMaxCores]};  // CallersRing's, by core
  // What each core counts for itself (its own cache line): written by that
  // core only.
  struct alignas(64) PerCore {
    std::atomic<uint64_t> gets{0};    // ReadShared's
    std::atomic<uint64_t> writes{0};  // WriteShared's
    // DhtWrite::request's counts this core hands out: [next, end), taken
    // from next_request_ kRequestBlock at a time.
    uint64_t next_request = 0, end_request = 0;
  };
  static constexpr uint64_t kRequestBlock = 1024;
  std::unique_ptr<PerCore[]> per_core_{new PerCore[core::kMaxCores]};
  std::atomic<uint64_t> grace_ns_{60'000'000'000};     // SetTombstoneGrace
  alignas(64) std::atomic<size_t> bytes_pool_{0};      // the shards' items' bytes (DhtItems::share_bytes)
  alignas(64) std::atomic<uint64_t> next_request_{1};  // DhtWrite::request's count (PerCore's blocks)
  // Moves (home core, rebuild.cc): the rings this node moved to since its
  // settled ring, oldest first (a report naming one of them as settled is
  // adopted); each node's last report (settled tag, goal tag); Move's
  // rounds.
  std::vector<std::shared_ptr<const DhtRing>> since_;
  std::unordered_map<NodeId, std::pair<uint64_t, uint64_t>> moved_;
  uint64_t move_generation_ = 0;
  // The joiner's side (home core): members that route by a ring with this
  // node already (kSwitched).
  std::unordered_map<NodeId, uint64_t> ready_;
  bool joining_ = false;                 // home core: this node is the joiner
  bool switching_ = false;               // home core: the joiner is telling the members
  uint64_t ask_generation_ = 0;          // home core: AskToJoin's rounds
  std::atomic<bool> joined_set_{false};  // the joiner's Join returns
  alignas(64) mutable SpinLock stats_lock_;
  Stats stats_ GUARDED_BY(stats_lock_);  // the node's own (the shards count theirs)
};

}  // namespace fox::ebb::dht
