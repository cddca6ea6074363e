// The Dht's placement (ebb/include/fox/ebb/dht_ring.h, dht_placement.h):
// the key hash, the ring, balance and movement figures, plans and their
// progress. The replicas under random histories: dht_simulation_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "fox/ebb/dht_hash.h"
#include "dht_placement.h"  // ebb/ (internal)
#include "fox/ebb/dht_ring.h"
#include "dht_test_util.h"

namespace fox::ebb {
namespace {

using dht_test::KeyHash;
using dht_test::MakeRing;
using dht_test::Nodes;

// ---------------------------------------------------------------- hash

TEST(DhtHash, MatchesXxHash64ReferenceVectors) {
  // From the reference implementation (libxxhash 0.8.1's XXH64).
  auto h = [](const std::string& s, uint64_t seed = 0) { return XxHash64(s.data(), s.size(), seed); };
  EXPECT_EQ(h(""), 0xEF46DB3751D8E999ull);
  EXPECT_EQ(h("a"), 0xD24EC4F1A98C6E5Bull);
  EXPECT_EQ(h("abc"), 0x44BC2CF5AD770999ull);
  EXPECT_EQ(h("message digest"), 0x066ED728FCEEB3BEull);
  EXPECT_EQ(h("abcdefghijklmnopqrstuvwxyz012345"), 0xBF2CD639B4143B80ull);  // exactly one stripe
  EXPECT_EQ(h("The quick brown fox jumps over the lazy dog"), 0x0B242D361FDA71BCull);
  EXPECT_EQ(h("The quick brown fox jumps over the lazy dog", 1), 0xDF5091B6DAD2C6DBull);
  uint8_t bytes[100];
  for (int i = 0; i < 100; ++i) bytes[i] = uint8_t(i);
  EXPECT_EQ(XxHash64(bytes, sizeof bytes, 0x9E3779B97F4A7C15ull), 0x3B97D91EBA03E785ull);
}

// ---------------------------------------------------------------- ring

TEST(DhtRing, RejectsBadConfigsAndMembershipChanges) {
  EXPECT_FALSE(DhtRing::Create({.replication = 0}).ok());
  EXPECT_FALSE(DhtRing::Create({.replication = kMaxReplication + 1}).ok());
  EXPECT_FALSE(DhtRing::Create({.tokens_per_node = 0}).ok());
  EXPECT_FALSE(DhtRing::Create({.partition_bits = kMaxPartitionBits + 1}).ok());
  EXPECT_EQ(DhtRing::Create({}, {1, 2, 1}).error(), Error::kInvalidArgument);
  DhtRing ring = MakeRing({.partition_bits = 6}, {1, 2, 3});
  EXPECT_EQ(ring.WithNode(2).error(), Error::kAlreadyExists);
  EXPECT_EQ(ring.Change({7, 7}, {}).error(), Error::kAlreadyExists);
  EXPECT_EQ(ring.WithoutNode(9).error(), Error::kNotFound);
  EXPECT_EQ(ring.Change({}, {1, 1}).error(), Error::kNotFound);
  auto next = ring.Change({9, 8}, {2});
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->epoch(), 1u);
  EXPECT_EQ(next->nodes(), (std::vector<NodeId>{1, 3, 8, 9}));
}

// The owners of each partition, walked by hand from the tokens.
TEST(DhtRing, OwnersAreTheFirstDistinctNodesClockwiseFromThePartition) {
  for (uint32_t r : {1u, 2u, 3u}) {
    RingConfig config{.replication = r, .tokens_per_node = 5, .partition_bits = 8};
    std::vector<NodeId> nodes = {4, 17, 23, 99, 1000};
    DhtRing ring = MakeRing(config, nodes);
    std::vector<std::pair<uint64_t, NodeId>> tokens;
    for (NodeId n : nodes) {
      for (uint32_t i = 0; i < config.tokens_per_node; ++i) tokens.push_back({DhtTokenPosition(n, i), n});
    }
    std::sort(tokens.begin(), tokens.end());
    for (uint32_t p = 0; p < ring.partitions(); ++p) {
      uint64_t start = uint64_t(p) << 56;
      size_t i = std::lower_bound(tokens.begin(), tokens.end(), std::make_pair(start, NodeId(0))) - tokens.begin();
      std::vector<NodeId> expected;
      for (size_t k = 0; expected.size() < r; ++k) {
        NodeId n = tokens[(i + k) % tokens.size()].second;
        if (std::find(expected.begin(), expected.end(), n) == expected.end()) expected.push_back(n);
      }
      auto owners = ring.OwnersOf(p);
      ASSERT_EQ(std::vector<NodeId>(owners.begin(), owners.end()), expected) << "partition " << p;
    }
  }
}

TEST(DhtRing, KeysMapToTheirPartitionsOwners) {
  DhtRing ring = MakeRing({.replication = 2, .partition_bits = 10}, Nodes(1, 6));
  for (uint64_t key = 0; key < 2000; ++key) {
    uint64_t h = KeyHash(key);
    uint32_t p = ring.PartitionOf(h);
    ASSERT_EQ(p, h >> 54);
    auto owners = ring.OwnersOf(p);
    ASSERT_EQ(ring.Replicas(h, 2), std::vector<NodeId>(owners.begin(), owners.end()));
    // More replicas than the ring's r extend the same walk.
    std::vector<NodeId> four = ring.Replicas(h, 4);
    ASSERT_EQ(four.size(), 4u);
    ASSERT_TRUE(std::equal(owners.begin(), owners.end(), four.begin()));
    ASSERT_EQ(std::set<NodeId>(four.begin(), four.end()).size(), 4u);
    // Fewer nodes than r: every node, once.
    ASSERT_EQ(ring.Replicas(h, 8).size(), 6u);
  }
}

TEST(DhtRing, DependsOnTheMembersOnlyNotOnTheirHistory) {
  RingConfig config{.replication = 3, .tokens_per_node = 16, .partition_bits = 10};
  DhtRing direct = MakeRing(config, {2, 5, 7, 11});
  DhtRing walked = MakeRing(config, {11, 3, 5});
  walked = *walked.WithNode(9);
  walked = *walked.Change({2, 7}, {3});
  walked = *walked.WithoutNode(9);
  EXPECT_EQ(walked.epoch(), 3u);
  ASSERT_EQ(walked.nodes(), direct.nodes());
  for (uint32_t p = 0; p < direct.partitions(); ++p) {
    ASSERT_TRUE(std::ranges::equal(walked.OwnersOf(p), direct.OwnersOf(p)));
  }
}

TEST(DhtRing, SmallAndEmptyRings) {
  DhtRing empty = MakeRing({.partition_bits = 4}, {});
  EXPECT_TRUE(empty.OwnersOf(3).empty());
  EXPECT_TRUE(empty.Replicas(12345, 2).empty());
  DhtRing one = MakeRing({.replication = 3, .partition_bits = 0}, {42});
  EXPECT_EQ(one.partitions(), 1u);
  EXPECT_EQ(one.PartitionOf(~0ull), 0u);
  ASSERT_EQ(one.OwnersOf(0).size(), 1u);
  EXPECT_EQ(one.OwnersOf(0)[0], 42u);
}

// Balance: keys per node over the mean, with the default V = 256 tokens
// and P = 16384 partitions, r = 2, nodes 1..n, 200000 keys. Measured:
//   n =  3: primaries 1.049x, copies 1.035x
//   n =  8: primaries 1.103x, copies 1.032x
//   n = 64: primaries 1.191x, copies 1.152x
// (nodes 100..163: 1.152x and 1.094x; with V = 64 and P = 4096, 64 nodes
// 100..163 reach 1.31x and 1.23x). Random tokens leave a node's arc uneven
// by about 1/sqrt(V) (6% at V = 256), and the fullest of 64 is ~2.5 sigma up.
TEST(DhtRing, BalanceOfTheDefaultRing) {
  constexpr uint64_t kKeys = 200000;
  struct Case {
    uint32_t nodes;
    double primary_bound, copy_bound;
  };
  for (Case c : {Case{3, 1.10, 1.08}, Case{8, 1.15, 1.08}, Case{64, 1.25, 1.20}}) {
    DhtRing ring = MakeRing({}, Nodes(1, c.nodes));
    std::map<NodeId, uint64_t> primaries, copies;
    for (uint64_t key = 0; key < kKeys; ++key) {
      auto owners = ring.OwnersOf(ring.PartitionOf(KeyHash(key)));
      ++primaries[owners[0]];
      for (NodeId n : owners) ++copies[n];
    }
    ASSERT_EQ(primaries.size(), c.nodes);
    uint64_t max_primary = 0, max_copy = 0;
    for (auto& [n, k] : primaries) max_primary = std::max(max_primary, k);
    for (auto& [n, k] : copies) max_copy = std::max(max_copy, k);
    double primary_ratio = double(max_primary) / (double(kKeys) / c.nodes);
    double copy_ratio = double(max_copy) / (2.0 * kKeys / c.nodes);
    EXPECT_LT(primary_ratio, c.primary_bound) << c.nodes << " nodes";
    EXPECT_LT(copy_ratio, c.copy_bound) << c.nodes << " nodes";
    RecordProperty("primary_max_over_mean_" + std::to_string(c.nodes), std::to_string(primary_ratio));
    RecordProperty("copy_max_over_mean_" + std::to_string(c.nodes), std::to_string(copy_ratio));
  }
}

// ---------------------------------------------------------------- plans

// Keys per partition for `keys` keys, to weigh plans by keys moved.
std::vector<uint64_t> KeysPerPartition(const DhtRing& ring, uint64_t keys) {
  std::vector<uint64_t> count(ring.partitions());
  for (uint64_t key = 0; key < keys; ++key) ++count[ring.PartitionOf(KeyHash(key))];
  return count;
}

// A join moves copies to the new node only, about 1/(n+1) of all copies
// (r = 2, defaults, 200000 keys). Measured, copies moved over all copies:
//   n = 3: 0.253 (1/(n+1) = 0.250); n = 8: 0.109 (0.111); n = 64: 0.0143 (0.0154)
// so within 0.8x..1.2x of 1/(n+1) (asserted).
// and the keys whose owner set changed are r times that (each key moved
// gets one new copy; its other owner keeps its copy).
TEST(DhtPlan, JoinMovesAboutOneOverNPlusOneOfTheCopiesToTheNewNodeOnly) {
  constexpr uint64_t kKeys = 200000;
  for (uint32_t n : {3u, 8u, 64u}) {
    DhtRing ring = MakeRing({}, Nodes(1, n));
    DhtRing next = *ring.WithNode(1000);
    Plan plan = *PlanMove(ring, next);
    EXPECT_TRUE(plan.lost.empty());
    std::vector<uint64_t> keys = KeysPerPartition(ring, kKeys);
    uint64_t moved = 0;
    std::set<uint32_t> partitions;
    for (const Transfer& t : plan.transfers) {
      EXPECT_EQ(t.destination, 1000u);
      EXPECT_TRUE(ring.Owns(t.source, t.partition));
      EXPECT_FALSE(ring.Owns(t.destination, t.partition));
      moved += keys[t.partition];
      partitions.insert(t.partition);
    }
    // Each moved partition has one copy released by the node the newcomer displaced.
    EXPECT_EQ(plan.releases.size(), plan.transfers.size());
    double fraction = double(moved) / (2.0 * kKeys), ideal = 1.0 / (n + 1);
    EXPECT_GT(fraction, 0.8 * ideal) << n << " nodes";
    EXPECT_LT(fraction, 1.2 * ideal) << n << " nodes";
    RecordProperty("join_moved_fraction_" + std::to_string(n), std::to_string(fraction));
    // Partitions whose owners did not change are not in the plan.
    for (uint32_t p = 0; p < ring.partitions(); ++p) {
      if (!partitions.count(p)) ASSERT_TRUE(std::ranges::equal(ring.OwnersOf(p), next.OwnersOf(p)));
    }
  }
}

// A death rebuilds exactly the dead node's copies, from survivors that held
// them, spread over many sources and destinations.
TEST(DhtPlan, DeathRebuildsOnlyTheDeadNodesCopies) {
  for (uint32_t r : {1u, 2u, 3u}) {
    DhtRing ring = MakeRing({.replication = r}, Nodes(1, 16));
    DhtRing next = *ring.WithoutNode(5);
    Plan plan = *PlanMove(ring, next);
    size_t owned = 0;
    for (uint32_t p = 0; p < ring.partitions(); ++p) owned += ring.Owns(5, p);
    std::set<NodeId> sources, destinations;
    if (r == 1) {
      EXPECT_EQ(plan.lost.size(), owned);
      EXPECT_TRUE(plan.transfers.empty());
      continue;
    }
    EXPECT_TRUE(plan.lost.empty());
    EXPECT_EQ(plan.transfers.size(), owned);
    EXPECT_TRUE(plan.releases.empty());
    for (const Transfer& t : plan.transfers) {
      EXPECT_TRUE(ring.Owns(t.source, t.partition));
      EXPECT_NE(t.source, 5u);
      EXPECT_TRUE(next.Owns(t.destination, t.partition));
      EXPECT_FALSE(ring.Owns(t.destination, t.partition));
      sources.insert(t.source);
      destinations.insert(t.destination);
    }
    EXPECT_GE(sources.size(), 12u) << "r " << r;
    EXPECT_GE(destinations.size(), 12u) << "r " << r;
  }
}

// r owners dying at once lose exactly the partitions they all owned;
// r - 1 lose nothing.
TEST(DhtPlan, DataIsLostOnlyWhenEveryOwnerDies) {
  for (uint32_t r : {1u, 2u, 3u}) {
    DhtRing ring = MakeRing({.replication = r, .tokens_per_node = 32, .partition_bits = 10}, Nodes(1, 6));
    std::vector<NodeId> dead = Nodes(2, r);
    Plan plan = *PlanMove(ring, *ring.Change({}, dead));
    std::vector<uint32_t> expected;
    for (uint32_t p = 0; p < ring.partitions(); ++p) {
      auto owners = ring.OwnersOf(p);
      if (std::ranges::all_of(owners, [&](NodeId n) { return std::ranges::count(dead, n) != 0; })) {
        expected.push_back(p);
      }
    }
    EXPECT_FALSE(expected.empty());
    EXPECT_EQ(plan.lost, expected) << "r " << r;
    dead.pop_back();
    if (!dead.empty()) EXPECT_TRUE(PlanMove(ring, *ring.Change({}, dead))->lost.empty()) << "r " << r;
  }
}

TEST(DhtPlan, IsTheSameOnEveryNodeAndEmptyWithoutChange) {
  RingConfig config{.replication = 2, .tokens_per_node = 16, .partition_bits = 10};
  DhtRing a = MakeRing(config, {1, 2, 3, 4, 5});
  DhtRing b = *MakeRing(config, {5, 3, 6, 1}).Change({2, 4}, {6});  // same members, another history
  DhtRing next = *a.Change({7}, {3});
  DhtRing next_b = *MakeRing(config, {1, 2, 4, 5, 7}).Change({}, {});
  Plan pa = *PlanMove(a, next), pb = *PlanMove(b, next_b);
  EXPECT_EQ(pa.transfers, pb.transfers);
  EXPECT_EQ(pa.lost, pb.lost);
  EXPECT_EQ(pa.releases, pb.releases);
  EXPECT_FALSE(pa.transfers.empty());
  EXPECT_TRUE(PlanMove(a, *a.Change({}, {}))->transfers.empty());
  EXPECT_EQ(PlanMove(a, MakeRing({.partition_bits = 10}, {1})).error(), Error::kInvalidArgument);
}

TEST(DhtPlacement, TracksProgressAndKeepsFinishedTransfersAcrossChanges) {
  RingConfig config{.replication = 2, .tokens_per_node = 16, .partition_bits = 8};
  Placement placement(MakeRing(config, Nodes(1, 5)));
  EXPECT_FALSE(placement.moving());
  EXPECT_TRUE(placement.Settle().ok());
  EXPECT_EQ(placement.MoveTo(placement.target()).error(), Error::kOutOfRange);
  ASSERT_TRUE(placement.MoveTo(*placement.target().WithoutNode(3)).ok());
  ASSERT_TRUE(placement.moving());
  std::vector<Transfer> all = placement.Remaining();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(placement.Settle().error(), Error::kBusy);
  // Finish half, then a node joins: the finished ones whose destination
  // still owns the partition stay done.
  for (size_t i = 0; i < all.size(); i += 2) ASSERT_TRUE(placement.Complete(all[i]).ok());
  ASSERT_TRUE(placement.MoveTo(*placement.target().WithNode(6)).ok());
  for (size_t i = 0; i < all.size(); i += 2) {
    const Transfer& t = all[i];
    bool still = placement.target().Owns(t.destination, t.partition);
    Transfer now{};
    for (const Transfer& x : placement.plan().transfers) {
      if (x.partition == t.partition && x.destination == t.destination) now = x;
    }
    if (still) EXPECT_TRUE(placement.IsDone(now)) << t.partition;
  }
  EXPECT_EQ(placement.Complete({999, 1, 2}).error(), Error::kNotFound);
  for (const Transfer& t : placement.Remaining()) ASSERT_TRUE(placement.Complete(t).ok());
  EXPECT_EQ(placement.remaining(), 0u);
  ASSERT_TRUE(placement.Settle().ok());
  EXPECT_FALSE(placement.moving());
  EXPECT_EQ(placement.settled().epoch(), 2u);
  for (uint32_t p = 0; p < placement.target().partitions(); ++p) {
    ASSERT_TRUE(std::ranges::equal(placement.WriteSet(p), placement.target().OwnersOf(p)));
  }
}

}  // namespace
}  // namespace fox::ebb
