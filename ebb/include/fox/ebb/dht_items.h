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
// Deletes leave tombstones (version kept, value dropped), so that a late
// replication of an older state cannot bring a deleted key back. Tombstones
// are never collected in this version (a delete costs its key's bytes).
//
// Not thread-safe: one owner, or the owner's lock. Allocates (event
// context).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "fox/result.h"

namespace fox::ebb {

inline constexpr size_t kDhtMaxKey = 250;                // memcached's key limit
inline constexpr size_t kDhtMaxValue = size_t(1) << 20;  // 1 MiB, memcached's default item limit
// Versions count from 1 per key; one above this is refused (kOutOfRange
// for a write, kInvalidArgument from the wire) rather than wrapping.
inline constexpr uint64_t kDhtMaxVersion = uint64_t(1) << 62;

// What a node holds for a key.
struct DhtEntry {
  uint64_t version = 0;  // > 0 for anything stored
  bool tombstone = false;
  uint32_t flags = 0;
  uint64_t expiry_ns = 0;  // on the holder's clock; 0: never
  std::string value;
  bool operator==(const DhtEntry&) const = default;
};

// A write as a client asks for it, applied by the key's primary.
struct DhtWrite {
  enum class Mode : uint8_t {
    kSet = 0,      // store unconditionally
    kAdd = 1,      // only if absent (kAlreadyExists otherwise)
    kReplace = 2,  // only if present (kNotFound otherwise)
    kCas = 3,      // only if present with version == cas (kAlreadyExists: changed; kNotFound: absent)
  };
  Mode mode = Mode::kSet;
  uint32_t flags = 0;
  uint32_t ttl_s = 0;  // seconds to live; 0: never expires
  uint64_t cas = 0;    // kCas only
  std::string key;
  std::string value;
};

class DhtItems {
 public:
  // The live entry for `key` (not a tombstone, not expired at `now_ns`).
  const DhtEntry* Find(std::string_view key, uint64_t now_ns) const;
  // What is stored for `key`, tombstones and expired items too (what a
  // primary replicates).
  const DhtEntry* Held(std::string_view key) const;
  // The primary's write: checks the mode against the live entry, then
  // stores the item at the next version. Returns the stored entry.
  // kNotFound / kAlreadyExists as DhtWrite::Mode says; kOutOfRange past
  // kDhtMaxVersion.
  Result<DhtEntry> Write(const DhtWrite& write, uint64_t now_ns);
  // The primary's delete: a tombstone at the next version, returned.
  // kNotFound when there is no live entry (nothing is stored then).
  Result<DhtEntry> Delete(std::string_view key, uint64_t now_ns);
  // A replica's apply: stores `entry` if its version is newer than what is
  // held, or as new and `from_primary` (sent by the key's current primary)
  // and different (true); else keeps what is held (false). A primary never
  // makes two states with one version, so the second rule only replaces
  // an unacknowledged write of a dead primary that reached this replica
  // but not the new primary, which then wrote the same version: the
  // replicas follow the new primary.
  bool Apply(std::string_view key, DhtEntry entry, bool from_primary = false);

  // Every key held (tombstones too), in no order. `fn` must not modify.
  template <class F>
  void ForEach(F&& fn) const {
    for (const auto& [key, entry] : map_) fn(key, entry);
  }
  size_t size() const { return map_.size(); }  // entries, tombstones included
  size_t live(uint64_t now_ns) const;

 private:
  uint64_t NextVersion(std::string_view key) const;
  std::unordered_map<std::string, DhtEntry> map_;
};

// Wire format of the Dht's Rpc bodies (little-endian, after Rpc's request
// id). Decoders reject wrong lengths, keys over kDhtMaxKey, values over
// kDhtMaxValue and unknown modes with kInvalidArgument; they never read
// past `length`.
//   write:     u8 mode, u32 flags, u32 ttl_s, u64 cas, u16 key length, key, value
//   key:       the key's bytes (get, delete)
//   replicate: u64 version, u8 tombstone, u32 flags, u64 ms left to live
//              (0: never), u16 key length, key, value
//   item:      u64 version (cas), u32 flags, value (a get's reply)
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
}  // namespace dht_wire

}  // namespace fox::ebb
