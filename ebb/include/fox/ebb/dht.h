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
// newer than theirs, which keeps the primary's order of writes to a key,
// and only if the primary's rings are not older than theirs: a replica
// that heard of a membership change first refuses, and the primary sends
// the state again once it has, to the owners of the new rings (a node that
// joined among them), as dht_ring.cc's rule says.
//
// Moves. Data moves between rings as the placement model plans it
// (dht_placement.h, dht_ring.cc's design comment; dht/rebuild.cc): every
// node keeps S, the last settled ring (every owner in S held every
// acknowledged write of its partitions), and after each change runs its
// transfers of PlanMove(S, goal), goal being the ring after deaths or a
// join's target: for each partition whose owners changed, one holder (an
// owner in S still alive) copies it to each new owner. Then it reports its
// S and goal to every member; a ring settles (S := it) once every member
// reported it from the same S. So a second death before a move settles
// plans again from S, and an owner still being filled is never taken for
// a holder. Nodes that disagree on S (a death between two nodes' last
// reports) converge: a node adopts a newer S another reports, if it moved
// through it.
//
// Joins (rebalancing). A node joins a running Dht with Join(members): it
// routes by the members' ring meanwhile (it is nobody's owner yet) and
// asks each member to add it. A member takes the target ring T = its ring
// plus the joiner: from then on it sends every write it replicates to the
// owners in its ring and in T, and moves the data (above; the joiner's
// partitions), reporting to the joiner too. When every member reported T
// from the same S, the joiner tells them all to switch: each routes by T
// from then on, settled, and drops the items of partitions it no longer
// owns. While nodes' rings differ, requests to a node that is not the
// key's primary in its ring are refused and retried, as after a death. A
// death during a join: every node recomputes its ring and T without the
// dead node and moves again (one plan carries the join and the dead
// node's copies); the joiner waits for reports of the new T. One join at
// a time (another joiner is refused, kBusy, and retries).
//
// Failure. When the transport declares a node dead (am::OnPeerState), each
// node recomputes its ring without it (DhtRing::WithoutNode, the same on
// every node); the next owner of each of its partitions is primary and
// already holds the data. Then the data moves to the new owners (Moves,
// above: rebuild), so that once the ring settles every key has min(r,
// nodes) copies again. A call whose
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
// key's primary, reads the shard's items there (dht/local.cc), without
// a hop, as long as the shard's core has opened its reads (it found this
// node the primary by the current ring and holds every other node's read
// lease); the items are a DhtTable (dht_table.h) and what is replaced is
// freed by ebb::RetireLater once no read can hold it. A write (not a delete,
// not a take or wait) of a key with no other owner (a node alone, r = 1)
// on another core is applied there too (dht/local.cc), holding the
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
// the shard's own core only spins: dht/shard.h).
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
#include "fox/net/am.h"
#include "fox/result.h"

namespace fox::ebb {
namespace dht {
class Node;
}  // namespace dht

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
  // node the transport holds dead are refused here (kPeerDead, nothing
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
    uint64_t fenced = 0;            // replicated writes refused here: their primary's rings were older
    uint64_t collected = 0;         // tombstones forgotten here (old: Tombstones, above)
    uint64_t leases_renewed = 0;    // reads that asked the other owners first (no lease: dht/local.cc)
    uint64_t leases_refused = 0;    // of those, reads refused: an owner did not answer
    uint64_t shared_gets = 0;       // of served_gets, those read on the calling core from another's shard (no hop)
    uint64_t shared_writes = 0;     // of served_writes, those applied by the calling core to another's shard (no hop)
    uint64_t settles = 0;           // moves after deaths settled here (every node's copies done: dht/rebuild.cc)
  };
  // This node's counters: its own and its shards' summed.
  Stats stats() const;
  // Requests served here (gets answered, writes and deletes applied, states
  // replicated) by the shards of each core that serves shards, by core
  // (0 .. min(kShards, serving cores) - 1): where a node's load went. Any
  // context.
  std::vector<uint64_t> CoreLoad() const;

 private:
  std::unique_ptr<dht::Node> node_;  // ebb/dht/node.h: the parts, one concept each
  static inline std::atomic<Dht*> constructed_{nullptr};
};

}  // namespace fox::ebb
