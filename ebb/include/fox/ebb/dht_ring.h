// The Dht's consistent-hash ring (Dynamo, Cassandra): which nodes hold
// which keys. Pure logic: no network, no threads, no clock; every node
// computes the same ring from the same membership. The design, the
// write/rebuild rule and what they guarantee: the comment at the top of
// dht_ring.cc; moving data between rings: dht_placement.h.
//
// - Each node puts `tokens_per_node` virtual nodes (tokens) on a 64-bit
//   ring; a token's position is XXH64 of (node id, index), so a node's
//   tokens depend on its id alone.
// - The hash space is cut into 2^partition_bits equal partitions (a key's
//   partition is the top bits of its DhtKeyHash). Partitions are the unit
//   of ownership and of transfer.
// - The owners of a partition are the first min(r, nodes) distinct nodes
//   met walking the ring clockwise from the partition's first hash; the
//   first is the primary.
// - A DhtRing is an immutable value: Change() makes the next ring, one
//   epoch later.
//
// Contexts: construction and Change allocate (tokens, owner table), so
// event context only; the accessors are const and never allocate except
// Replicas. A ring shared between cores must not be mutated (it cannot be).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "fox/net/ids.h"
#include "fox/result.h"

namespace fox::ebb {

inline constexpr uint32_t kMaxReplication = 8;
inline constexpr uint32_t kMaxPartitionBits = 16;

struct RingConfig {
  uint32_t replication = 2;        // r, 1..kMaxReplication
  uint32_t tokens_per_node = 256;  // V, at least 1
  uint32_t partition_bits = 14;    // 2^bits partitions, 0..kMaxPartitionBits
  // With the defaults the fullest of 64 nodes holds 1.09x-1.15x the mean
  // of copies (1.15x-1.19x of primaries; dht_ring_test.cc measures it);
  // a ring of 64 nodes costs 256 KiB of tokens and 128 KiB of owners at r = 2.
  bool operator==(const RingConfig&) const = default;
};

class DhtRing {
 public:
  // A ring of `nodes` (any order) at `epoch` (a node joining a Dht takes
  // its members' epoch). kInvalidArgument: a bad config or a node listed
  // twice.
  static Result<DhtRing> Create(const RingConfig& config, std::vector<NodeId> nodes = {}, uint64_t epoch = 0);

  // The ring one epoch later, after `joined` came and `dead` left (in one
  // step, so that a plan covers both). kAlreadyExists: a joining node is
  // on the ring (or listed twice); kNotFound: a dead node is not. Node ids
  // are never reused (fox/net/ids.h): keeping it so is the caller's business.
  Result<DhtRing> Change(const std::vector<NodeId>& joined, const std::vector<NodeId>& dead) const;
  Result<DhtRing> WithNode(NodeId node) const { return Change({node}, {}); }
  Result<DhtRing> WithoutNode(NodeId node) const { return Change({}, {node}); }

  uint64_t epoch() const { return epoch_; }
  const RingConfig& config() const { return config_; }
  uint32_t replication() const { return config_.replication; }
  uint32_t partitions() const { return 1u << config_.partition_bits; }
  // The members, ascending.
  const std::vector<NodeId>& nodes() const { return nodes_; }
  bool Contains(NodeId node) const;

  uint32_t PartitionOf(uint64_t key_hash) const {
    return config_.partition_bits == 0 ? 0 : uint32_t(key_hash >> (64 - config_.partition_bits));
  }
  // The first hash of `partition`: where the walk for its owners starts.
  uint64_t PartitionStart(uint32_t partition) const {
    return config_.partition_bits == 0 ? 0 : uint64_t(partition) << (64 - config_.partition_bits);
  }
  // The min(r, nodes) distinct owners of `partition` (< partitions()),
  // primary first, in ring order; empty on an empty ring. Valid while the
  // ring lives.
  std::span<const NodeId> OwnersOf(uint32_t partition) const {
    return {owners_.data() + size_t(partition) * config_.replication, owner_counts_[partition]};
  }
  // The min(r, nodes) distinct nodes holding a key with this hash, for any
  // r <= kMaxReplication (more than the ring's r: candidates beyond the
  // owners, in ring order). With r == replication(), OwnersOf its partition.
  std::vector<NodeId> Replicas(uint64_t key_hash, uint32_t r) const;
  // The primary of a key with this hash: the first owner of its partition.
  // The ring must not be empty.
  NodeId PrimaryOf(uint64_t key_hash) const { return OwnersOf(PartitionOf(key_hash))[0]; }
  bool Owns(NodeId node, uint32_t partition) const;

 private:
  struct Token {
    uint64_t position;
    NodeId node;
    auto operator<=>(const Token&) const = default;
  };
  DhtRing() = default;
  static Result<void> Check(const RingConfig& config);
  void Build();  // tokens_ and owners_ from nodes_
  // Appends to `out` the first `want` distinct nodes from token `index` on.
  void Walk(size_t index, uint32_t want, NodeId* out, uint32_t* count) const;

  RingConfig config_;
  uint64_t epoch_ = 0;
  std::vector<NodeId> nodes_;
  std::vector<Token> tokens_;          // ascending by position (ties by node)
  std::vector<NodeId> owners_;         // partitions() rows of r slots
  std::vector<uint8_t> owner_counts_;  // per partition: min(r, nodes)
};

// The position of `node`'s token number `index` on the ring.
uint64_t DhtTokenPosition(NodeId node, uint32_t index);

}  // namespace fox::ebb
