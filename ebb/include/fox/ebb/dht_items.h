// One node's copies of the Dht's items, and the Dht's wire format (dht.h).
// Pure logic: no network, no threads, no clock (callers pass the time).
//
// Versions. Every item and every delete carries a per-key version, given
// by the key's primary: one more than what it holds for the key (an item
// or a tombstone), so a primary that took over from a dead one continues
// above every acknowledged write (it holds them all; see Apply for the
// unacknowledged ones). A replica applies a
// replicated state only if its version is newer than what it holds: the
// primary's writes to one key end in the primary's order on every replica
// whatever order the messages arrive in (large values travel by another
// path than small ones, and events may run on other cores). The version
// is also the item's memcached CAS value.
//
// Exactly once. A client names each write (DhtWrite::request) and sends
// it again under the same name when its primary died before answering. The
// key's state remembers the last kDhtRecentWrites writes applied to it
// (their names, versions and answers) and travels with it to the replicas,
// so the new primary answers a write it already holds from the record
// instead of applying it twice (an Add would answer kAlreadyExists, an
// Incr or a Take count twice). A write the dead primary applied but no
// replica acknowledged is gone with it, and applied once when sent again.
//
// Deletes leave tombstones (version kept, value dropped), so that a late
// replication of an older state cannot bring a deleted key back. The Dht
// collects a tombstone once it is old (dht.h, "Tombstones"): every owner
// forgets it, and the key starts again at version 1.
//
// One owner changes it (or the owner's lock is held); with share_reads,
// Find and Held may be called from any core meanwhile (the map is a
// DhtTable, dht_table.h). Allocates (event context).
#pragma once

#include <atomic>

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "fox/ebb/dht_entry.h"
#include "fox/ebb/dht_table.h"
#include "fox/result.h"

namespace fox::ebb {

inline constexpr size_t kDhtMaxKey = 250;                // memcached's key limit
inline constexpr size_t kDhtMaxValue = size_t(1) << 20;  // 1 MiB, memcached's default item limit
// Versions count from 1 per key; one above this is refused (kOutOfRange
// for a write, kInvalidArgument from the wire) rather than wrapping.
inline constexpr uint64_t kDhtMaxVersion = uint64_t(1) << 62;
// Writes to one key remembered for exactly-once answers (see above), and
// the longest answer remembered (a counter's decimal value).
inline constexpr size_t kDhtRecentWrites = 4;
inline constexpr size_t kDhtMaxRecordedAnswer = 20;

// memcached's rule for the values incr/decr (and the Dht's counters) work
// on: decimal digits, trailing spaces allowed (memcached may leave them), at
// most a uint64. False for anything else.
bool DhtParseCounter(std::string_view s, uint64_t* out);

// A write as a client asks for it, applied by the key's primary: every
// memcached mutation (apps/memcached's Store maps onto these one to one).
// Errors: kNotFound (the mode needs a live item and there is none),
// kAlreadyExists (kAdd of a live item; a cas check that failed),
// kUnsupported (kIncr/kDecr of a value that is not a decimal uint64),
// kOutOfRange (kAppend/kPrepend past kDhtMaxValue; a version past
// kDhtMaxVersion), kNoMemory (the holder's byte limit, DhtItems::Limit).
struct DhtWrite {
  enum class Mode : uint8_t {
    kSet = 0,      // store unconditionally
    kAdd = 1,      // only if absent
    kReplace = 2,  // only if present
    kCas = 3,      // kSet with check_cas (kept as its own mode: memcached's "cas")
    kAppend = 4,   // value added at the end; flags and expiry kept
    kPrepend = 5,  // value added at the front; flags and expiry kept
    kIncr = 6,     // the decimal value + delta (wraps at 2^64); flags and expiry kept
    kDecr = 7,     // the decimal value - delta, floored at 0
    kTouch = 8,    // a new expiry (ttl_s); value and flags kept
    kDelete = 9,   // a tombstone
    // libFOX's waits (dht.h: Take, WaitFor). kBusy from DhtItems::Write
    // means "not yet": the primary keeps the request up to wait_ms and
    // tries again after each write to the key.
    kTake = 10,  // the decimal value >= delta: it becomes value - delta (a semaphore's P)
    kWait = 11,  // nothing changes; done once the key is live and (delta 0, or its decimal value >= delta)
  };
  static constexpr Mode kLastMode = Mode::kWait;
  // ttl_s: seconds to live from when the primary applies it; 0 never
  // expires; kExpired: stored already expired (memcached's negative
  // exptime: the write succeeds, the item is gone).
  static constexpr uint32_t kExpired = UINT32_MAX;

  Mode mode = Mode::kSet;
  bool check_cas = false;  // any mode: the live item's version must be `cas` (kCas: always)
  bool create = false;     // kIncr/kDecr: an absent key is created holding `initial`, flags 0, ttl_s
  uint32_t flags = 0;
  uint32_t ttl_s = 0;
  uint64_t cas = 0;
  uint64_t delta = 0;    // kIncr/kDecr/kTake/kWait
  uint64_t initial = 0;  // kIncr/kDecr with create
  uint32_t wait_ms = 0;  // kTake/kWait: how long the primary may hold the request (0: answer at once)
  // The client's name for this write, the same when it is sent again after
  // its primary died: (node << 40) | count; 0: none (applied every time).
  uint64_t request = 0;
  std::string key;
  std::string value;  // kSet/kAdd/kReplace/kCas/kAppend/kPrepend
};

// Whether a mode's answer carries the stored item (its value, flags and
// version) rather than only its version: incr/decr give the new number,
// touch (memcached's gat) the item.
constexpr bool DhtWriteAnswersItem(DhtWrite::Mode mode) {
  return mode == DhtWrite::Mode::kIncr || mode == DhtWrite::Mode::kDecr || mode == DhtWrite::Mode::kTouch ||
         mode == DhtWrite::Mode::kTake || mode == DhtWrite::Mode::kWait;
}
// Modes the primary may hold (a kBusy from DhtItems::Write: not yet).
constexpr bool DhtWriteWaits(DhtWrite::Mode mode) {
  return mode == DhtWrite::Mode::kTake || mode == DhtWrite::Mode::kWait;
}

class DhtItems {
 public:
  // The live entry for `key` (not a tombstone, not expired at `now_ns`).
  const DhtEntry* Find(std::string_view key, uint64_t now_ns) const {
    return FindLive(key, [now_ns] { return now_ns; });
  }
  // The same, asking `now()` for the time only when the item expires (a
  // clock read is dear where the emulator serializes them).
  template <class Now>
  const DhtEntry* FindLive(std::string_view key, Now&& now) const {
    const DhtEntry* entry = Held(key);
    if (entry == nullptr || entry->tombstone) return nullptr;
    return entry->expiry_ns == 0 || entry->live(now()) ? entry : nullptr;
  }
  // What is stored for `key`, tombstones and expired items too (what a
  // primary replicates).
  const DhtEntry* Held(std::string_view key) const;
  // The primary's write: checks the mode against the live entry, then
  // stores the result at the next version. Returns the stored entry (a
  // tombstone for kDelete; for kWait the live entry, nothing stored)
  // without its record of applied writes, and with its value only for the
  // modes whose answer carries it (DhtWriteAnswersItem).
  // Errors as DhtWrite says, and kBusy for a wait not satisfied yet;
  // nothing is stored then. A write whose request the key's record holds
  // is not applied again: the answer is the one it had (deduplicated()).
  Result<DhtEntry> Write(const DhtWrite& write, uint64_t now_ns);
  uint64_t deduplicated() const { return deduplicated_; }
  // Write of mode kDelete without a cas check.
  Result<DhtEntry> Delete(std::string_view key, uint64_t now_ns);
  // memcached's flush_all on this holder: every item (expired too) becomes a
  // tombstone one version up (a write at that version from the key's
  // primary replaces it on a replica: Apply's second rule). Returns how
  // many items were flushed.
  size_t Flush();
  // Bytes of keys and values held (tombstones: their keys), and the limit
  // a primary's Write may not pass (0: none; kNoMemory). Replicas' Apply
  // is never refused: a replica is as full as its primaries.
  size_t bytes() const { return bytes_; }
  void set_limit(size_t bytes) { limit_ = bytes; }
  // Items that share `pool` (a node's Dht shards, each on its core) count
  // their bytes there too, and the limit applies to the pool's total: this
  // holder's bytes exactly, the others' to within kPoolSlack each (they add
  // their changes to the pool 64 KiB at a time). Before any item is stored.
  void share_bytes(std::atomic<size_t>* pool) { pool_ = pool; }
  // Lets other cores call Find and Held while the owner changes the items:
  // what they may still be reading is handed to `retire` (ebb::RetireLater)
  // instead of being freed. Before any item is stored.
  void share_reads(DhtTable::Retire retire) { table_.set_retire(retire); }
  // A replica's apply: stores `entry` if its version is newer than what is
  // held, or as new and `from_primary` (sent by the key's current primary)
  // and different (true); else keeps what is held (false). A primary never
  // makes two states with one version, so the second rule only replaces
  // an unacknowledged write of a dead primary that reached this replica
  // but not the new primary, which then wrote the same version: the
  // replicas follow the new primary.
  bool Apply(std::string_view key, DhtEntry entry, bool from_primary = false);
  // Forgets `key` (no tombstone: for a holder that is no longer an owner,
  // after a join moved the key's partition away). False if not held.
  bool Drop(std::string_view key);

  // Tombstones by age. Every tombstone stored (a delete, a replicated one,
  // a flush) is numbered in order: generation() is the last number given.
  // OldTombstones(g) takes those numbered up to g that are still the
  // key's state, with their versions (each is handed out once; Requeue
  // numbers it again, to be handed out later). Collect forgets the key if
  // its state is still the tombstone of that version (false if the key was
  // written since, or is not held).
  struct Tombstone {
    std::string key;
    uint64_t version;
  };
  uint64_t generation() const { return generation_; }
  std::vector<Tombstone> OldTombstones(uint64_t up_to_generation);
  void Requeue(const std::string& key);
  bool Collect(std::string_view key, uint64_t version);
  size_t tombstones() const { return tomb_generation_.size(); }

  // Every key held (tombstones too), in no order. `fn` must not modify.
  template <class F>
  void ForEach(F&& fn) const {
    table_.ForEach(fn);
  }
  size_t size() const { return table_.size(); }  // entries, tombstones included
  size_t live(uint64_t now_ns) const;            // not tombstones, not expired (a scan)
  size_t stored() const { return stored_; }      // not tombstones (expired ones too, until written)

 private:
  // Stores `entry` for `key`, keeping bytes_ and the tombstones' numbers.
  void Store(std::string_view key, DhtEntry entry);
  void NumberTombstone(const std::string& key);
  DhtTable table_;
  // Tombstones in the order stored (generation, key), and each tombstone
  // key's current generation (an older queue entry of the key is stale).
  std::deque<std::pair<uint64_t, std::string>> tomb_queue_;
  std::unordered_map<std::string, uint64_t> tomb_generation_;
  uint64_t generation_ = 0;
  size_t bytes_ = 0;
  size_t stored_ = 0;
  size_t limit_ = 0;
  std::atomic<size_t>* pool_ = nullptr;  // share_bytes
  // Bytes added (or taken, below 0) since they were last added to the
  // pool: it is written once per kPoolSlack bytes of change, not per
  // write (the pool's cache line is every shard's).
  static constexpr int64_t kPoolSlack = 64 * 1024;
  int64_t pool_unsent_ = 0;
  void SendToPool();
  uint64_t deduplicated_ = 0;
  void AddBytes(size_t n);
  void SubtractBytes(size_t n);
};

// Wire format of the Dht's Rpc bodies (little-endian, after Rpc's request
// id). Decoders reject wrong lengths, keys over kDhtMaxKey, values over
// kDhtMaxValue and unknown modes with kInvalidArgument; they never read
// past `length`.
//   write:     u8 mode, u8 options (1: check_cas, 2: create), u32 flags,
//              u32 ttl_s, u64 cas, u64 delta, u64 initial, u32 wait_ms,
//              u64 request, u16 key length, key, value
//   key:       the key's bytes (get, delete)
//   replicate: u64 version, u8 tombstone, u32 flags, u64 ms left to live
//              (0: never), u8 applied count (<= kDhtRecentWrites),
//              u16 key length, key, per applied write (u64 request,
//              u64 version, u8 answer length <= kDhtMaxRecordedAnswer,
//              answer), value
//   item:      u64 version (cas), u32 flags, value (a get's reply)
//   collect:   u32 count, then per tombstone u64 version, u16 key length, key
namespace dht_wire {
std::vector<uint8_t> EncodeWrite(const DhtWrite& write);
Result<DhtWrite> DecodeWrite(const uint8_t* data, size_t length);
Result<std::string> DecodeKey(const uint8_t* data, size_t length);
// The entry's expiry travels as time left, so clocks need not agree.
std::vector<uint8_t> EncodeReplicate(std::string_view key, const DhtEntry& entry, uint64_t now_ns);
struct Replicate {
  std::string key;
  DhtEntry entry;  // expiry on the receiver's clock
};
Result<Replicate> DecodeReplicate(const uint8_t* data, size_t length, uint64_t now_ns);
std::vector<uint8_t> EncodeItem(const DhtEntry& entry);
Result<DhtEntry> DecodeItem(const uint8_t* data, size_t length);
std::vector<uint8_t> EncodeCollect(const std::vector<DhtItems::Tombstone>& tombstones);
Result<std::vector<DhtItems::Tombstone>> DecodeCollect(const uint8_t* data, size_t length);
}  // namespace dht_wire

}  // namespace fox::ebb
