// The Dht's placement: ring, partitions, and the rule that moves data
// between rings without losing acknowledged writes (dht_ring.h,
// dht_placement.h).
//
// Design
// ------
// Ring. Each node has V tokens at XXH64(node id, index); a partition's
// owners are the first min(r, n) distinct nodes clockwise from its first
// hash (Dynamo's "preference list"). Tokens depend on the node id only, so
// a ring is a function of (config, member set): every node that knows the
// same members computes the same ring and the same owners, with no
// coordinator. Adding a node only inserts it into some preference lists
// (each list keeps its order and loses its last entry), so a join moves
// data to the new node only; removing a node only deletes it from lists,
// so a death moves only the dead node's copies, each rebuilt on the next
// node of the list, which the dead node's V tokens spread over the
// survivors.
//
// Partitions. 2^bits fixed partitions (4096 by default) are the unit of
// ownership and of transfer: a plan is a list of (partition, source,
// destination), data streams a partition at a time, and the owner table is
// r small integers per partition. The count is fixed for a Dht's life
// (changing it would rehash every key). Balance has two limits: V random
// tokens per node leave a node's arc uneven by about 1/sqrt(V), and P
// partitions over n nodes quantize each share by about sqrt(n/P); with
// 64 nodes, V = 64 and P = 4096 the fullest node held 1.23x the mean
// of copies, V = 256 and P = 16384 (the defaults) 1.09x-1.15x.
//
// State between rings: S and T. Placement keeps two rings: S, the last
// settled ring (every owner of every partition in S held all of its
// acknowledged writes when S settled), and T, the target ring (the current
// members). While they differ:
//   holders(p)  = owners_S(p) that are still members of T;
//   write set   = owners_T(p) plus holders(p);
//   plan        = for each owner_T(p) not among holders(p), one transfer
//                 from one holder (a deterministic pick among the holders,
//                 spreading the streams), or, if p has no holder left,
//                 p is reported lost (it restarts empty on its T owners).
// Everything is a function of (S, T): every node computes the same plan.
// Sources are picked by rendezvous hashing over the holders, so a source
// keeps its streams when another holder dies. A membership change in the
// middle of a move (a source or a destination dies, a node joins) replaces
// T and recomputes the plan from S: a stream whose (partition, source,
// destination) survives goes on, the others stop (a destination drops a
// partition it is no longer meant to hold); a destination that finished a
// partition and owns it in the new T too keeps it done (it has been in the
// write set throughout, so it still holds everything). A lost partition
// takes no writes until the move settles, then starts again, empty. When
// every transfer is complete the Dht settles (S := T): holders that no
// longer own a partition drop it, writes go to owners_T only.
//
// The write/rebuild rule (why no acknowledged write is lost):
//   1. A write is applied at the key's primary, which then sends the key's
//      state, tagged with its view (its ring's epoch, or its target's
//      during a join), to the rest of the write set its rings name, and
//      acknowledges once each has applied it. A node whose view is newer
//      than the write's refuses it without applying it (the fence,
//      dht/replication.cc); the primary sends it again once its own rings
//      caught up, to the write set they name. A node whose view is older
//      applies it: it streams nothing for the newer view yet. A node
//      applies a state only if its version is newer than what it holds.
//   2. A stream copies the source's current content of the partition in
//      any order, in pieces, and the destination merges it by version
//      (newer wins). The source starts it only once its view is T's.
//   3. Deletes are versioned tombstones (a plain removal could be undone by
//      a stream carrying the old value). A tombstone is collected (dht.h,
//      "Tombstones") only when no move runs, by every owner before the
//      primary, and only once older than any copy can be on its way.
// Claim: at every moment each holder of p holds every acknowledged write of
// p. True at settle (definition of S). A write acknowledged since went to
// the whole write set, holders included; holders only leave by dying. And
// when a transfer to d completes, d holds every acknowledged write w: w
// reached the source (as its primary or a replica) either before the
// source's view reached T, and then the source held it when its stream
// started, so the stream carried w or a newer version; or after, when the
// fence let it in only from a primary whose view was T's or newer, whose
// write set contains d, so d got w directly; merging by version never
// replaces w by an older value. Hence after the move completes every T
// owner holds everything: the settled T satisfies the definition of S, and
// induction goes on. Without the fence, a write on its way when a node
// joins reaches only the old owners, and one that streamed the partition
// first leaves the joiner without it (the unit simulation's
// WithoutTheFenceLateWritesAreLost, and once a hosted run of
// tests/cluster's dht_join).
//
// What it guarantees. No acknowledged write is lost while, since the last
// settle, fewer than min(r, n) nodes died (n: members of S): every
// partition keeps a holder, since a partition's holders are its min(r, n)
// S owners less the dead. After a completed move every key has exactly
// min(r, n) copies, on its owners. A partition whose S owners all died is
// reported lost, never silently emptied.
// What it does not. It assumes fail-stop nodes and an accurate failure
// detector (a dead node stays dead, as the transport declares it); every
// node must apply the same sequence of membership changes and settles
// (numbered by epoch), which the Dht orders through one sequencer; a
// change during a move restarts transfers from S (no credit for finished
// ones), so back-to-back failures cost repeated streaming; it says nothing
// about reads (reading any holder or T owner that has finished is the
// Dht's rule to choose) or about concurrent writers to one key.
#include "fox/ebb/dht_ring.h"

#include <algorithm>
#include <cassert>

#include "fox/ebb/dht_hash.h"

namespace fox::ebb {

uint64_t DhtTokenPosition(NodeId node, uint32_t index) {
  // Little-endian (node, index): the same bytes on every node.
  uint8_t bytes[8];
  for (int i = 0; i < 4; ++i) {
    bytes[i] = uint8_t(node >> (8 * i));
    bytes[4 + i] = uint8_t(index >> (8 * i));
  }
  constexpr uint64_t kTokenSeed = 0x676e69722e786f66ull;  // "fox.ring"
  return XxHash64(bytes, sizeof bytes, kTokenSeed);
}

Result<void> DhtRing::Check(const RingConfig& config) {
  if (config.replication == 0 || config.replication > kMaxReplication) return Error::kInvalidArgument;
  if (config.tokens_per_node == 0 || config.partition_bits > kMaxPartitionBits) return Error::kInvalidArgument;
  return Ok();
}

Result<DhtRing> DhtRing::Create(const RingConfig& config, std::vector<NodeId> nodes, uint64_t epoch) {
  FOX_TRY(Check(config));
  std::sort(nodes.begin(), nodes.end());
  if (std::adjacent_find(nodes.begin(), nodes.end()) != nodes.end()) return Error::kInvalidArgument;
  DhtRing ring;
  ring.config_ = config;
  ring.epoch_ = epoch;
  ring.nodes_ = std::move(nodes);
  ring.Build();
  return ring;
}

Result<DhtRing> DhtRing::Change(const std::vector<NodeId>& joined, const std::vector<NodeId>& dead) const {
  std::vector<NodeId> gone = dead;
  std::sort(gone.begin(), gone.end());
  if (std::adjacent_find(gone.begin(), gone.end()) != gone.end()) return Error::kNotFound;
  for (NodeId node : gone) {
    if (!Contains(node)) return Error::kNotFound;
  }
  DhtRing next;
  next.config_ = config_;
  next.epoch_ = epoch_ + 1;
  std::set_difference(nodes_.begin(), nodes_.end(), gone.begin(), gone.end(), std::back_inserter(next.nodes_));
  size_t kept = next.nodes_.size();
  for (NodeId node : joined) {
    if (Contains(node)) return Error::kAlreadyExists;
    next.nodes_.push_back(node);
  }
  std::sort(next.nodes_.begin() + kept, next.nodes_.end());
  if (std::adjacent_find(next.nodes_.begin() + kept, next.nodes_.end()) != next.nodes_.end()) {
    return Error::kAlreadyExists;
  }
  std::inplace_merge(next.nodes_.begin(), next.nodes_.begin() + kept, next.nodes_.end());
  next.Build();
  return next;
}

bool DhtRing::Contains(NodeId node) const { return std::binary_search(nodes_.begin(), nodes_.end(), node); }

bool DhtRing::Owns(NodeId node, uint32_t partition) const {
  auto owners = OwnersOf(partition);
  return std::find(owners.begin(), owners.end(), node) != owners.end();
}

void DhtRing::Build() {
  tokens_.clear();
  tokens_.reserve(nodes_.size() * config_.tokens_per_node);
  for (NodeId node : nodes_) {
    for (uint32_t i = 0; i < config_.tokens_per_node; ++i) tokens_.push_back({DhtTokenPosition(node, i), node});
  }
  std::sort(tokens_.begin(), tokens_.end());
  uint32_t r = config_.replication;
  owners_.assign(size_t(partitions()) * r, 0);
  owner_counts_.assign(partitions(), 0);
  if (tokens_.empty()) return;
  // Partition starts ascend, so the first token at or after each start only
  // moves forward.
  size_t index = 0;
  for (uint32_t p = 0; p < partitions(); ++p) {
    uint64_t start = PartitionStart(p);
    while (index < tokens_.size() && tokens_[index].position < start) ++index;
    uint32_t count = 0;
    Walk(index, r, &owners_[size_t(p) * r], &count);
    owner_counts_[p] = uint8_t(count);
  }
}

void DhtRing::Walk(size_t index, uint32_t want, NodeId* out, uint32_t* count) const {
  want = std::min<uint32_t>(want, uint32_t(nodes_.size()));
  *count = 0;
  for (size_t seen = 0; *count < want && seen < tokens_.size(); ++seen, ++index) {
    NodeId node = tokens_[index % tokens_.size()].node;
    if (std::find(out, out + *count, node) == out + *count) out[(*count)++] = node;
  }
  assert(*count == want);
}

std::vector<NodeId> DhtRing::Replicas(uint64_t key_hash, uint32_t r) const {
  uint32_t partition = PartitionOf(key_hash);
  if (r == config_.replication) {
    auto owners = OwnersOf(partition);
    return {owners.begin(), owners.end()};
  }
  NodeId out[kMaxReplication];
  uint32_t count = 0;
  if (!tokens_.empty()) {
    Token start{PartitionStart(partition), 0};
    size_t index = std::lower_bound(tokens_.begin(), tokens_.end(), start) - tokens_.begin();
    Walk(index, std::min(r, kMaxReplication), out, &count);
  }
  return {out, out + count};
}

}  // namespace fox::ebb
