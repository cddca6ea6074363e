// The Dht's own Rpc protocol between nodes (dht.h; the items' codecs are
// dht_items.h's dht_wire): handler numbers, the ring and tag codecs of
// joins, replies that start with a status, and the small rules every part
// of the Dht shares. Internal to ebb/.
//
// Requests (Rpc bodies), to the key's shard's Ebb (kDhtShardIds[ShardOf(hash)])
// for kGet, kWrite, kReplicate and kCollect, to kDhtId for the others:
//   kGet:       key                 reply: status, then an item on kOk
//   kWrite:     a write             reply: status, then on kOk u64 cas, or
//                                   an item for DhtWriteAnswersItem modes
//   kReplicate: u64 the primary's view (ViewOf), the key's state after a write
//               reply: status; kBusy from a node whose view is newer: it has
//               not applied it, and the primary sends it again, to the owners
//               its own rings name once they caught up (replication.cc)
//   kCopy:      as kReplicate, from a move (rebuild.cc): the source's goal
//               epoch, a key's state   reply: status (a node whose ring is
//               newer and that owns the key in neither its ring nor its
//               target drops it: a copy from a stale move)
//   kFlush:     u32 delay_s         reply: status
//   kCount:     (empty)             reply: status, u64 items, u64 bytes (live, as primary)
//   kJoin:      (empty), from a joiner  reply: status (kOk: streaming; kAlreadyExists:
//                                   routes by a ring with it; kBusy: another join runs),
//                                   then u64 the member's ring epoch, u32 count and the
//                                   ring's members (the joiner routes by that ring)
//   kMoved:     u64 settled tag, u64 goal tag   to every member and the joiner: this node
//               ran its transfers of the move from that settled ring to that goal
//               (rebuild.cc); reply: status
//   kJoinSwitch: u64 target tag     from the joiner: route by the target; reply: status
//   kConfirm:   (empty), from a key's primary to its other owners before
//               it serves a read without a lease (leases.cc)   reply: status
//   kCollect:   tombstones (dht_wire's collect), from their keys' primary:
//               forget them                                         reply: status
// Every reply's payload starts with a u32 status (fox::Error): the Dht's
// own answer (kNotFound: no such key), apart from Rpc's (kPeerDead: the
// node died; kNotFound: not seen alive yet). kBusy means "not the key's
// primary here": the caller retries after its ring has caught up.
//
// Contexts: the codecs allocate (event context); Answer sends (event or
// delivery context); SleepUntil blocks the calling event.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "fox/clock.h"
#include "fox/ebb/dht.h"
#include "fox/ebb/dht_hash.h"
#include "fox/ebb/dht_items.h"
#include "fox/ebb/dht_ring.h"
#include "fox/ebb/rpc.h"
#include "fox/timer.h"

namespace fox::ebb::dht {

// (3 was a delete, before deletes became writes of mode kDelete.)
enum Handler : uint16_t {
  kGet = 1,
  kWrite = 2,
  kReplicate = 4,
  kFlush = 5,
  kCount = 6,
  kJoin = 7,
  kMoved = 8,
  kJoinSwitch = 9,
  kCollect = 10,
  kConfirm = 11,
  kCopy = 12
};
inline constexpr uint64_t kSwitched = ~uint64_t(0);  // a joiner's view of a member that routes by a ring with it
inline constexpr uint64_t kRetryNs = 20'000'000;     // between attempts while rings disagree

inline uint64_t HashOf(const std::string& key) { return DhtKeyHash(key.data(), key.size()); }
// Whether `key` belongs to shard `shard` (a request for another shard's key
// is malformed: shards hold their own keys only).
inline bool InShard(const std::string& key, int shard) { return Dht::ShardOf(HashOf(key)) == shard; }
inline bool KeyOk(const std::string& key) { return !key.empty() && key.size() <= kDhtMaxKey; }

// A ring's name in joins: its members (FNV-1a), the same on every node that
// computed it, whatever the epoch its changes gave it there. Never kSwitched.
uint64_t Tag(const DhtRing& ring);
std::vector<uint8_t> TagBytes(uint64_t tag);

// A node's view of the membership: its ring's epoch, or its target's
// during a join (later). Every change of the rings moves it up, but a
// joiner's death, which drops the target (join.cc); equal views name the
// same rings once the nodes have heard of the same changes.
inline uint64_t ViewOf(const DhtRing* ring, const DhtRing* target) {
  return std::max(ring ? ring->epoch() : 0, target ? target->epoch() : 0);
}

// A kReplicate or kCopy body: the sender's epoch and the key's state.
std::vector<uint8_t> ReplicateBody(const std::string& key, const DhtEntry& entry, uint64_t epoch);

// kJoin's answer after the status: u64 epoch, u32 count, the members.
std::vector<uint8_t> EncodeRing(const DhtRing& ring);
// EncodeRing's bytes back; false if malformed.
bool DecodeRing(const uint8_t* data, size_t length, uint64_t* epoch, std::vector<NodeId>* nodes);

// A reply's bytes: the status, then `payload`.
std::vector<uint8_t> ReplyBytes(Error status, const std::vector<uint8_t>& payload);
// Answers Rpc request `id` of node `to` with ReplyBytes. A client that died
// is not an error: nobody waits.
void Answer(NodeId to, uint64_t id, Error status, const std::vector<uint8_t>& payload = {});
// The Dht's status in a reply: Rpc's error if the call failed, kCorrupt if
// there is none.
Error StatusOf(const Result<Rpc::Bytes>& r);

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
inline Dht::Item AnswerOf(const DhtWrite& write, const DhtEntry& stored) {
  return DhtWriteAnswersItem(write.mode) ? Dht::Item{stored.value, stored.flags, stored.version}
                                         : Dht::Item{{}, 0, stored.version};
}

}  // namespace fox::ebb::dht
