// Dht: the job's replicated distributed hash table (DESIGN.md, "Dht";
// issue 13), a system Ebb at kDhtId with per-core representatives (Shards,
// below). Keys are placed by the consistent-hash ring of dht_ring.h over the
// job's nodes; each key lives on its r owners (default 2), the first being
// its primary.
//
//   auto dht = Dht::Get();             // on every node, before am::Start
//   dht->Start();                      // on every node, after am::Start
//   dht->Set("k", "v");  dht->Get("k");  dht->Delete("k");
//   dht->Write(w);  // any memcached mutation (DhtWrite: append, incr, touch, cas...)
//   dht->Flush();   // memcached's flush_all, on every node
//
// Routing. A call goes (by Rpc) to the key's primary in the caller's ring,
// which serves reads from its own copy and applies writes. The ring's
// members are the nodes named by the transport (am::Peers(), place 0
// included) plus this node, or the list given to Start: every node of the
// job must run the Dht and Start it alike. A call whose primary is this
// node skips the transport: its shard serves it (inline on the shard's
// core, else as an event there while the caller is blocked): a get, or a
// write that cannot be held, is taken from the caller's frame and answered
// into it, neither encoded nor decoded (a compute node under TCG, 1 core:
// 221 k -> 583 k gets/s, 98 k -> 161 k sets/s).
//
// Replication. The primary applies a write, then sends the key's resulting
// state (item or tombstone, with its version: dht_items.h) to the other
// owners, and answers only when each acknowledged: an acknowledged write
// is on min(r, nodes) nodes. Replicas apply a state only if its version is
// newer than theirs, which keeps the primary's order of writes to a key.
//
// Joins (rebalancing). A node joins a running Dht with Join(members): it
// routes by the members' ring S meanwhile (it is nobody's owner yet) and
// asks each member to add it. A member takes the target ring T = S plus
// the joiner: from then on it sends every write it replicates to the
// owners in S and in T, and it streams to the joiner the items of the
// partitions the joiner will own for which it is the source (T's primary if
// that was an owner in S, else S's primary: dht_ring.cc's rule), then tells
// the joiner it is ready. When every member is, the joiner tells them all
// to switch: each routes by T from then on and drops the items of
// partitions it no longer owns. While nodes' rings differ, requests to a
// node that is not the key's primary in its ring are refused and retried,
// as after a death. A death during a join: every node recomputes S and T
// without the dead node and streams again; the joiner waits for readiness
// in the new T. One join at a time (another joiner is refused, kBusy, and
// retries).
//
// Failure. When the transport declares a node dead (am::OnPeerState), each
// node recomputes its ring without it (DhtRing::WithoutNode, the same on
// every node); the next owner of each of its partitions is primary and
// already holds the data. Then each node copies the items it is now
// primary for to owners that did not hold them before (rebuild), so that
// after the rebuild every key has min(r, nodes) copies again. A call whose
// primary dies before answering is retried once on the new primary, after
// the caller's ring has dropped the dead node. Every write carries the
// caller's name for it (DhtWrite::request), so a retried write that the
// dead primary applied and replicated is answered from the key's record,
// not applied twice: an Add does not answer kAlreadyExists, an Incr or a
// Take does not count twice (dht_items.h, "Exactly once"). A primary
// whose replica died re-sends the key's state to the new owners before
// answering. While two nodes' rings disagree (one has heard of a death, the
// other not yet), a node asked for a key it is not primary of refuses it
// and the caller retries (up to kRouteTimeoutMs).
//
// Tombstones. A delete leaves a tombstone at every owner (dht_items.h),
// so that an older copy of the key still on its way cannot bring it back.
// Once a tombstone is older than the grace (SetTombstoneGrace, 60 s by
// default: far longer than any copy can be on its way), the key's primary
// has every other owner forget it, then forgets it too; the key starts
// again at version 1. Not during a join or a rebuild; a round during which
// the ring changed leaves the primary's tombstones for the next round.
// (A cas taken before such a delete could then match the re-created key's:
// the grace after the delete is its bound.)
//
// Shards: per-core representatives. A key's hash places it twice: its high
// bits pick its partition in the ring (which nodes), its low bits one of
// kShards shards (which core there). Every node holds every shard, shard s
// on its kernel core s mod N, N = fox.dht_cores (default and at most
// KernelCores(): natively fox.kcores, default 1; hosted, every core: the
// cores that take events and timers; application cores are the
// application's). A shard is its keys' items, the takes and
// waits held for them, their tombstones' collector and read leases, served
// by events on the shard's core. A get on another core of this node, the
// key's primary, reads the shard's items there (Dht::ReadShared), without
// a hop, as long as the shard's core has opened its reads (it found this
// node the primary by the current ring and holds every other node's read
// lease); the items are a DhtTable (dht_table.h) and what is replaced is
// freed by ebb::RetireLater once no read can hold it. A write (not a delete,
// not a take or wait) of a key with no other owner (a node alone, r = 1)
// on another core is applied there too (Dht::WriteShared), holding the
// shard's items lock, as long as the shard's core has opened its writes
// (nobody waits on its keys, and the rings have not moved since); every
// change to a shard's items holds that lock. With 2 cores, the node's own
// clients (make bench B=dht_cores) get 1.8-2.0 x the gets of 1 core and set
// 1.6 x the sets on a compute node under TCG (hosted: 1.9-2.2 x and 1.0-1.2
// x, bound by the cores' shared cache lines on a 2-processor host; with a
// hop per get and per set: 0.49 x and 0.6 x hosted, 1.24 x the sets on the
// compute node). Messages about a key (get, write, replicate, collect) go to its
// shard's Ebb id (kDhtShardIds), which the transport delivers to that core
// directly; so requests to one node are served by all its kernel cores at
// once. Messages about the node (joins, flush, count, confirm) go to kDhtId,
// served on the home core (the constructing core), which asks the shards
// when it needs them (a rebuild or a stream runs on every shard at once).
//
// Threads. Requests are served as events on the shard's core (local gets
// and lone owners' writes on the caller's, above); they may block (a write
// waits for its replicas), and other requests run meanwhile.
// lock_ guards the rings and the node's counters; each shard reads the rings
// through a copy it renews when ring_generation_ moves (no shared lock on
// the request path), and counts in its own counters. Nothing allocates
// under a spinlock (STYLE.md): a shard's items lock is an EventMutex
// (fox/event_mutex.h; a waiter on another core spins, then blocks its event;
// the shard's own core only spins: dht.cc, Shard).
// Callers run on any core.
//
// Contexts and errors. Every operation blocks the calling event (event
// context, any core) until the primary answers. Errors: those of DhtWrite
// (dht_items.h: kNotFound, kAlreadyExists, kUnsupported, kOutOfRange,
// kNoMemory), kInvalidArgument (empty key or longer than kDhtMaxKey, value
// over kDhtMaxValue, unknown mode), kBusy (not started, or the ring has no
// members), kTimedOut (no answer: a write may or may not have been
// applied). Malformed requests from the network are answered with
// kInvalidArgument and counted, never trusted.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fox/core.h"
#include "fox/ebb/dht_items.h"
#include "fox/ebb/dht_ring.h"
#include "fox/ebb/ebb_ref.h"
#include "fox/ebb/shared_ebb.h"
#include "fox/ebb/static_ids.h"
#include "fox/function.h"
#include "fox/future.h"
#include "fox/net/am.h"
#include "fox/result.h"
#include "fox/spinlock.h"

namespace fox::ebb {

class Dht : public SharedEbb<Dht> {
 public:
  static EbbRef<Dht> Get() { return EbbRef<Dht>(kDhtId); }
  // How long a call keeps retrying while rings disagree.
  static constexpr uint64_t kRouteTimeoutMs = 15'000;
  // Shards per node (the top's "Shards"): the most cores of a node that
  // serve it. Part of the wire contract, as kDhtShardIds.
  static constexpr int kShards = 16;
  static int ShardOf(uint64_t key_hash) { return int(key_hash & (kShards - 1)); }

  // Listens for the node's messages on the calling core (its home core) and
  // for each shard's on its core. Event context.
  Dht();
  ~Dht();
  // This node's Dht if it has been constructed, else null (never
  // constructs it: the node status report uses it). Any context.
  static Dht* IfConstructed() { return constructed_.load(std::memory_order_acquire); }
  Dht(const Dht&) = delete;
  Dht& operator=(const Dht&) = delete;

  // Builds the ring from `members` (empty: am::Peers() and this node) and
  // follows deaths from now on. Every node must Start with the same config
  // and members. max_bytes: what this node's items may hold as a primary
  // (keys and values; 0: no limit): a write past it is kNoMemory.
  // kAlreadyExists if started; kInvalidArgument (config, or this node not
  // among members). Event context, transport started.
  Result<void> Start(const RingConfig& config = {}, std::vector<NodeId> members = {}, size_t max_bytes = 0);
  // Joins the running Dht whose members are `members` (not this node; the
  // same config as theirs), as the top says; returns once the members route
  // by the ring with this node. `members` may name only some of them (one
  // is enough: their answers carry their ring, which this node takes). kTimedOut if they have not within
  // timeout_ms (the join goes on: members keep sending it writes). Event
  // context, transport started; instead of Start.
  Result<void> Join(const RingConfig& config, std::vector<NodeId> members, uint64_t timeout_ms = 60'000,
                    size_t max_bytes = 0);
  // Whether this node holds a live copy of `key` (as any owner): for tests
  // and diagnostics. Blocks the calling event.
  bool HoldsCopy(const std::string& key);

  struct Item {
    std::string value;
    uint32_t flags = 0;
    uint64_t cas = 0;
  };
  Result<Item> Get(const std::string& key);
  // Applies `write` at the key's primary (dht_items.h says what each mode
  // does) and returns the stored item: its cas always; its value and flags
  // only for the modes DhtWriteAnswersItem names (incr/decr: the new number,
  // touch: the item).
  Result<Item> Write(DhtWrite write);
  // Write, returning the stored item's cas.
  Result<uint64_t> Put(DhtWrite write);
  Result<uint64_t> Set(const std::string& key, const std::string& value, uint32_t flags = 0, uint32_t ttl_s = 0);
  Result<void> Delete(const std::string& key);
  // memcached's flush_all: every node of the ring turns every item it
  // holds into a tombstone, after `delay_s` seconds (0: before answering).
  // Returns how many nodes did (or will); an error only if none answered.
  // Not atomic across nodes: a write that races with a flush may survive
  // it, as with memcached's own flush on a busy server.
  Result<size_t> Flush(uint32_t delay_s = 0);

  // libFOX on the Dht (issue 13; dht_queue.h builds a task queue on these).
  // Counters are decimal values, as memcached's incr/decr.
  //
  // Add: adds `delta` to the counter at `key` (created holding `delta`);
  // returns the new count. kUnsupported: the value is not a counter.
  Result<uint64_t> Add(const std::string& key, uint64_t delta);
  // A counting semaphore's P: waits until the counter at `key` (absent:
  // until it exists) is at least `n`, then subtracts `n` in the same step at
  // the key's primary; returns what is left. Waiters are held at the primary
  // and tried again after every write to the key, in arrival order (a
  // smaller take may pass a larger one that cannot be served yet).
  // kTimedOut: not within wait_ms (nothing taken). A take whose primary dies
  // is sent again to the new one, which answers it from the key's record
  // if the first was applied and replicated (never twice).
  Result<uint64_t> Take(const std::string& key, uint64_t n, uint32_t wait_ms);
  // Waits until `key` is live and, if at_least > 0, a counter of at least
  // that (a barrier: every party Adds 1, then waits for the party count);
  // returns the item. kTimedOut: not within wait_ms.
  Result<Item> WaitFor(const std::string& key, uint64_t at_least, uint32_t wait_ms);

  // How much the whole Dht holds (memcached's stats): every node of the
  // ring counts the live items it is primary of, and their keys' and
  // values' bytes. Nodes that do not answer are left out (`nodes` says how
  // many did); an error only if none did.
  struct Census {
    uint64_t items = 0, bytes = 0;
    size_t nodes = 0, asked = 0;
  };
  Result<Census> Count();

  // Happens-before invariance for a node that died (APGAS's flush runs
  // this for a dead place before its finishes may return): writes from a
  // node the transport holds dead are refused here (kNotFound, nothing
  // applied), and this returns once no write from `origin` is being applied
  // here any more. So once every live node has run it after declaring
  // `origin` dead, each of `origin`'s writes is acknowledged by its replicas
  // or was never applied anywhere that counts. Blocks the calling event;
  // any core.
  void Quiesce(NodeId origin);

  // Tombstones are collected once older than this (Tombstones, above; at
  // least 1 ms). Any context.
  void SetTombstoneGrace(uint64_t ns);

  // The key's owners in this node's ring, primary first (empty before Start).
  std::vector<NodeId> OwnersOf(const std::string& key) const;
  // The members of this node's ring (empty before Start or Join).
  std::vector<NodeId> members() const;
  uint64_t epoch() const;

  struct Stats {
    uint64_t served_gets = 0, served_writes = 0, served_deletes = 0;
    uint64_t replicated = 0;        // states applied here as a replica
    uint64_t not_primary = 0;       // requests refused: not the key's primary here
    uint64_t bad_requests = 0;      // malformed or unknown handler
    uint64_t retries = 0;           // client calls sent again
    uint64_t resent = 0;            // writes re-sent to new owners after a replica died
    uint64_t rebuilt = 0;           // items copied to new owners after deaths
    uint64_t rebuild_failures = 0;  // copies that failed
    uint64_t rebuilds_running = 0;  // rebuilds not finished
    uint64_t flushed = 0;           // items turned into tombstones by flushes
    uint64_t waiting = 0;           // takes and waits held here now
    uint64_t waits_timed_out = 0;   // held ones answered kTimedOut
    uint64_t items = 0;             // held here: entries, tombstones included
    uint64_t live = 0;              // held here and not deleted (expired ones too until written, as memcached)
    uint64_t bytes = 0;             // of keys and values held here
    uint64_t deduplicated = 0;      // writes sent again after a primary died, answered from the record
    uint64_t joins = 0;             // joins switched to here (rings with a new node)
    uint64_t streamed = 0;          // items streamed to joining nodes
    uint64_t released = 0;          // items dropped after a join: no longer an owner
    uint64_t stale_copies = 0;      // copies refused: from a move this node's ring has gone past
    uint64_t collected = 0;         // tombstones forgotten here (old: Tombstones, above)
    uint64_t leases_renewed = 0;    // reads that asked the other owners first (no lease: dht.cc)
    uint64_t leases_refused = 0;    // of those, reads refused: an owner did not answer
    uint64_t shared_gets = 0;       // of served_gets, those read on the calling core from another's shard (no hop)
    uint64_t shared_writes = 0;     // of served_writes, those applied by the calling core to another's shard (no hop)
  };
  // This node's counters: its own and its shards' summed.
  Stats stats() const;
  // Requests served here (gets answered, writes and deletes applied, states
  // replicated) by the shards of each core that serves shards, by core
  // (0 .. min(kShards, serving cores) - 1): where a node's load went. Any
  // context.
  std::vector<uint64_t> CoreLoad() const;

 private:
  struct Shard;  // dht.cc
  // The core that serves shard `shard` on this node: shards lie on the
  // first fox.dht_cores kernel cores (default: all of them), in turn.
  int ShardCore(int shard) const { return shard % serving_cores_; }
  // Who asked: a node's Rpc request (node, id), or a call on this node that
  // skipped the transport (`local` gets the reply's bytes).
  struct Caller {
    NodeId node;
    uint64_t id;
    std::shared_ptr<Promise<Result<std::vector<uint8_t>>>> local;
  };
  // A request for a key whose primary is this node: served by its shard
  // directly (inline if the calling core is the shard's), no transport and
  // no Rpc. Returns the reply as Rpc would.
  Result<std::vector<uint8_t>> CallLocal(uint64_t key_hash, uint16_t handler, const std::vector<uint8_t>& body);
  // A get whose primary is this node, by the calling core's ring: served by
  // its shard as CallLocal would, but neither encoded nor decoded and with
  // no promise (the answer is written into the blocked caller's frame).
  // nullopt if the primary is another node or the shard says kBusy (Call
  // then routes and retries). Event context.
  std::optional<Result<Item>> GetHere(const std::string& key, uint64_t key_hash);
  // A get served on the calling core from shard `s` of another core while
  // the shard's reads are open (Shard's reads_generation): no hop, no lock.
  // nullopt when they are not (GetHere hops to the shard's core then).
  std::optional<Result<Item>> ReadShared(Shard& s, const std::string& key);
  // The shard's core, serving a get as the key's primary with its read
  // lease held: (re)opens the shard's reads to the other cores, as long as
  // every other node's lease holds (see Read leases in dht.cc).
  void OpenReads(Shard& s);
  // The shard of `key_hash` when this node is its primary by the calling
  // core's ring, else null; and GetHere/WriteHere's result from the serve's.
  Shard* ShardHere(uint64_t key_hash);
  static std::optional<Result<Item>> Answered(Error status, Item&& item);
  // The same for a write that cannot be held (DhtWriteWaits: those take
  // the routed path): applied by its shard from `write` in the caller's
  // frame, the item or version answered into it.
  std::optional<Result<Item>> WriteHere(const DhtWrite& write, uint64_t key_hash);
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
  // ServeWrite's work once the write is decoded and in shard `s`: applies
  // `write` from `from`, replicates it, and calls `answer(status, entry)`
  // once (entry: the stored item, on kOk). A write that must wait is held
  // for `holder` (answered later), or answered kBusy without one. May block.
  template <class Answer>
  void ApplyWrite(Shard& s, NodeId from, const DhtWrite& write, const Caller* holder, Answer&& answer);
  // A get of `key` (hash `key_hash`) served by shard `s`: kOk after
  // `use(entry)` (under a SharedRead: a write from another core may replace
  // the entry meanwhile; `use` must not block), kNotFound, kBusy (not the
  // key's primary here, or a read lease not held) or kInvalidArgument (not
  // this shard's key); counted. May block (a lease's renewal). Event
  // context, the shard's core.
  template <class Use>
  Error Look(Shard& s, std::string_view key, uint64_t key_hash, Use&& use);
  void ServeKey(Shard& s, const Caller& caller, uint16_t handler, const uint8_t* body, size_t length);
  // Answers `caller`: status, then `payload` (Rpc::Reply, or its promise).
  static void Reply(const Caller& caller, Error status, const std::vector<uint8_t>& payload = {});
  // Sends `body` under `handler` to the primary of `key_hash` (its shard's
  // Ebb there) and returns the reply's payload (after its status),
  // retrying as the header says.
  Result<std::vector<uint8_t>> Call(uint64_t key_hash, uint16_t handler, const std::vector<uint8_t>& body,
                                    uint64_t rpc_timeout_ms = 10'000);
  std::shared_ptr<const DhtRing> Ring() const;
  // A copy of the rings as of `generation` (each shard's, and each calling
  // core's), renewed when they moved: no shared lock or count on a
  // request's path.
  struct alignas(64) RingCopy {
    uint64_t generation = ~uint64_t(0);
    std::shared_ptr<const DhtRing> ring, target;
  };
  // `copy`, renewed if the rings moved since it was taken.
  const RingCopy& Renew(RingCopy& copy);
  // The ring as the calling core last copied it; null before Start. Valid
  // until the calling event blocks.
  const DhtRing* CallersRing() { return Renew(core_rings_[core::Current()]).ring.get(); }
  // Sets the rings (lock_ held) and tells the shards they moved.
  void SetRingsLocked(std::shared_ptr<const DhtRing> ring, std::shared_ptr<const DhtRing> target) REQUIRES(lock_);
  // Every shard's byte limit: `max_bytes` for the node's items together.
  void SetLimit(size_t max_bytes);
  // The node's messages (home core) and a shard's (its core).
  void Serve(NodeId from, uint16_t handler, const uint8_t* data, size_t length);
  void ServeShard(Shard& s, NodeId from, uint16_t handler, const uint8_t* data, size_t length);
  void ServeGet(Shard& s, const Caller& caller, const uint8_t* body, size_t length);
  void ServeWrite(Shard& s, const Caller& caller, const uint8_t* body, size_t length);
  void ServeReplicate(Shard& s, const Caller& caller, const uint8_t* body, size_t length);
  void ServeCollect(Shard& s, const Caller& caller, const uint8_t* body, size_t length);
  void ServeFlush(NodeId from, uint64_t id, const uint8_t* body, size_t length);
  void ServeCount(NodeId from, uint64_t id);
  // Runs `work(shard)` on every shard's core at once and returns when all
  // have. Event context.
  void OnEveryShard(Function<void(Shard&)> work);
  // Tombstones (above): a shard's collector, while it holds any, and one
  // primary's round.
  void CollectTombstones(Shard& s);
  void CollectRound(Shard& s, std::vector<DhtItems::Tombstone> old);
  // A take or wait the primary holds until it can be served or wait_ms passes.
  struct Waiter {
    Caller caller;
    DhtWrite write;
    uint64_t deadline_ns;
  };
  // Serves the held requests of `key` that can be now (after a write to it).
  void Wake(Shard& s, const std::string& key);
  // Answers a served take or wait: replicates a take first (blocks).
  void Finish(Shard& s, const Caller& caller, const DhtWrite& write, const DhtEntry& entry);
  // Answers held requests past their deadline, every 50 ms while any are held.
  void Sweep(Shard& s);
  // Sends `body` to every node of the ring; the replies (their payloads
  // after an ok status) and how many nodes there were.
  std::vector<std::vector<uint8_t>> AskEveryNode(uint16_t handler, const std::vector<uint8_t>& body, size_t* asked,
                                                 Error* last_error);
  // After a shard's core stored tombstones (a delete, a flush, a replica's
  // copy): starts the shard's collector unless it runs.
  void StartCollecting(Shard& s);
  // Whether this node is the primary of `key_hash` in the shard's ring.
  bool Primary(Shard& s, uint64_t key_hash);
  // Whether this primary may serve a read of `key_hash` from its copy (read
  // leases: dht.cc); asks the other owners when it must. Blocks.
  bool HoldsLease(Shard& s, uint64_t key_hash);
  // The ring when no join or rebuild moves data, else null.
  std::shared_ptr<const DhtRing> RingAtRest() const;
  // Sends `body` under `handler` to Ebb `ebb` on each of `nodes`; true if
  // all answer kOk. Blocks.
  bool AllAcknowledge(const std::vector<NodeId>& nodes, EbbId ebb, uint16_t handler, const std::vector<uint8_t>& body,
                      uint64_t timeout_ms);
  // Sends the key's current state to every owner but this node; true when
  // all acknowledged (waits for the ring to drop dead replicas and tries
  // the new owners).
  bool Replicate(Shard& s, const std::string& key, uint64_t key_hash);
  void OnDeath(NodeId node);
  // Copies the items this node is the source of (the top, "Joins") from
  // `before`'s owners to `after`'s new ones, every shard at once; returns
  // how many were copied. `what` names it in the log (rebuild, stream).
  uint64_t Rebuild(std::shared_ptr<const DhtRing> before, std::shared_ptr<const DhtRing> after, const char* what);
  uint64_t RebuildShard(Shard& s, const DhtRing& before, const DhtRing& after, uint64_t* failures);
  // Joins: a member streams to the joiners of `target` and tells them it
  // is ready; the joiner's side; the switch.
  void ServeJoin(NodeId from, uint64_t id);
  void ServeJoinReady(NodeId from, uint64_t id, const uint8_t* body, size_t length);
  void ServeJoinSwitch(NodeId from, uint64_t id, const uint8_t* body, size_t length);
  void Stream(std::shared_ptr<const DhtRing> settled, std::shared_ptr<const DhtRing> target);
  void MaybeSwitch();  // the joiner: every member ready for its target?
  void AskToJoin();    // the joiner
  void FollowDeaths(const std::vector<NodeId>& members);
  void Switch(std::shared_ptr<const DhtRing> target);
  // Owners of the partition of `key_hash` to replicate to: the shard's
  // ring's and, during a join, its target's. OtherOwners: the same by
  // `rings` (any core's copy), empty for a key this node alone owns.
  std::vector<NodeId> ReplicasOf(Shard& s, uint64_t key_hash);
  static std::vector<NodeId> OtherOwners(const RingCopy& rings, uint64_t key_hash);
  bool TakeRing(uint64_t epoch, std::vector<NodeId> nodes);

  static inline std::atomic<Dht*> constructed_{nullptr};
  int core_;
  int serving_cores_;  // ShardCore
  uint64_t subscription_ = 0;
  std::unique_ptr<Shard> shards_[kShards];
  std::unique_ptr<RingCopy[]> core_rings_{new RingCopy[core::kMaxCores]};  // CallersRing's, by core
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
  // Every request reads ring_generation_ (Renew, ReadShared): it lies on a
  // cache line that nothing written on a request's path shares.
  alignas(64) std::atomic<uint64_t> ring_generation_{0};  // moves with every change of ring_ or target_
  std::atomic<uint64_t> grace_ns_{60'000'000'000};        // SetTombstoneGrace
  alignas(64) std::atomic<size_t> bytes_pool_{0};         // the shards' items' bytes (DhtItems::share_bytes)
  alignas(64) std::atomic<uint64_t> next_request_{1};     // DhtWrite::request's count (PerCore's blocks)
  alignas(64) mutable SpinLock lock_;
  std::shared_ptr<const DhtRing> ring_ GUARDED_BY(lock_);
  std::shared_ptr<const DhtRing> target_ GUARDED_BY(lock_);  // T while a node joins
  // The joiner's side (home core): each member's readiness (the tag of the
  // target it streamed for; kSwitched: it routes by a ring with this node).
  std::unordered_map<NodeId, uint64_t> ready_;
  bool joining_ = false;                 // home core: this node is the joiner
  bool switching_ = false;               // home core: the joiner is telling the members
  uint64_t ask_generation_ = 0;          // home core: AskToJoin's rounds
  std::atomic<bool> joined_set_{false};  // the joiner's Join returns
  Stats stats_ GUARDED_BY(lock_);        // the node's own (the shards count theirs)
};

}  // namespace fox::ebb
