// The Dht's placement (ebb/include/fox/ebb/dht_ring.h, dht_placement.h):
// the key hash, the ring, plans, and a simulation of replicas under random
// membership histories that checks the invariants of dht_ring.cc's design
// comment: holders hold every acknowledged write, a settled Dht has exactly
// min(r, n) copies of each key on its owners, data is lost only after
// min(r, n) deaths since the last settle; plus balance and movement figures.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "fox/ebb/dht_hash.h"
#include "fox/ebb/dht_placement.h"
#include "fox/ebb/dht_ring.h"

namespace fox::ebb {
namespace {

std::vector<NodeId> Nodes(uint32_t first, uint32_t count) {
  std::vector<NodeId> out;
  for (uint32_t i = 0; i < count; ++i) out.push_back(first + i);
  return out;
}

DhtRing MakeRing(const RingConfig& config, std::vector<NodeId> nodes) {
  auto ring = DhtRing::Create(config, std::move(nodes));
  EXPECT_TRUE(ring.ok());
  return *ring;
}

uint64_t KeyHash(uint64_t key) { return DhtKeyHash(&key, sizeof key); }

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

// ---------------------------------------------------------------- simulation

// N simulated nodes, each holding partition -> key -> (version, value);
// writes to every member of the write set; streams that copy a source's
// current content a few keys at a time while writes go on; deaths between
// writes and in the middle of streams (of sources and destinations); joins;
// settles. After every step: every holder of a partition holds the latest
// acknowledged version of each of its keys. After every settle: each key
// has exactly min(r, n) copies, on its owners, and nowhere else. Losses
// happen only after min(r, n) deaths since the last settle.
class DhtSim {
 public:
  struct Counters {
    uint64_t histories = 0, writes = 0, refused_writes = 0, deaths = 0, joins = 0, settles = 0;
    uint64_t transfers_completed = 0, source_deaths_mid_stream = 0, destination_deaths_mid_stream = 0;
    uint64_t changes_mid_move = 0, kept_done = 0, lost_partitions = 0, lost_writes = 0;
  };

  DhtSim(RingConfig config, uint32_t nodes, uint64_t seed, uint32_t keys, Counters* counters)
      : config_(config), rng_(seed), keys_(keys), counters_(counters), placement_(MakeRing(config, Nodes(1, nodes))) {
    next_id_ = nodes + 1;
    for (NodeId n : placement_.target().nodes()) live_[n];
    members_at_settle_ = nodes;
    ++counters_->histories;
  }

  void Run(int steps) {
    for (int i = 0; i < steps && !::testing::Test::HasFatalFailure(); ++i) {
      RandomStep();
      CheckHolders();
    }
    Drain();
    if (placement_.moving()) Settle();
    CheckSettled();
  }

 private:
  struct Cell {
    uint64_t version, value;
  };
  using Data = std::map<uint64_t, Cell>;  // key -> cell, ordered: streams walk it
  struct Node {
    std::map<uint32_t, Data> partitions;
  };
  struct Stream {
    Transfer transfer;
    uint64_t cursor = 0;  // the next key to copy
  };

  uint32_t Pick(uint32_t n) { return uint32_t(rng_() % n); }
  uint32_t PartitionOfKey(uint64_t key) const { return placement_.target().PartitionOf(KeyHash(key)); }
  uint32_t SafeDeaths() const { return std::min<uint32_t>(config_.replication, uint32_t(members_at_settle_)); }

  void RandomStep() {
    uint32_t roll = Pick(100);
    if (roll < 50) return Write(Pick(keys_));
    if (roll < 75) {
      if (streams_.empty()) return Write(Pick(keys_));
      auto it = std::next(streams_.begin(), Pick(uint32_t(streams_.size())));
      return Advance(it->first, 1 + Pick(3));
    }
    if (roll < 83) return Kill(1);
    if (roll < 85) return Kill(2);  // two at once, in one epoch
    if (roll < 91) return Join(1);
    if (roll < 93) return Replace();
    if (roll < 96) return Settle();
    return Drain();
  }

  void Write(uint64_t key) {
    uint32_t p = PartitionOfKey(key);
    std::vector<NodeId> set = placement_.WriteSet(p);
    if (set.empty()) {
      ++counters_->refused_writes;  // lost partition: refused until the move settles
      return;
    }
    uint64_t version = next_version_++;
    for (NodeId n : set) {
      ASSERT_TRUE(live_.count(n)) << "write set names a dead node";
      Data& data = live_[n].partitions[p];
      auto [it, fresh] = data.try_emplace(key, Cell{version, version * 7});
      if (!fresh && it->second.version < version) it->second = {version, version * 7};
    }
    acked_[key] = version;  // every member holds it: acknowledged
    ++counters_->writes;
  }

  // Copies up to `chunk` keys of the source's current content from the cursor.
  void Advance(std::pair<uint32_t, NodeId> id, uint32_t chunk) {
    Stream& s = streams_.at(id);
    const Data& from = live_.at(s.transfer.source).partitions[s.transfer.partition];
    Data& to = live_.at(s.transfer.destination).partitions[s.transfer.partition];
    auto it = from.lower_bound(s.cursor);
    for (uint32_t i = 0; i < chunk && it != from.end(); ++i, ++it) {
      auto [at, fresh] = to.try_emplace(it->first, it->second);
      if (!fresh && at->second.version < it->second.version) at->second = it->second;
      s.cursor = it->first + 1;
    }
    if (it != from.end()) return;
    ASSERT_TRUE(placement_.Complete(s.transfer).ok());
    ++counters_->transfers_completed;
    streams_.erase(id);
  }

  void Drain() {
    while (!streams_.empty() && !::testing::Test::HasFatalFailure()) Advance(streams_.begin()->first, 1000000);
  }

  void Settle() {
    if (!placement_.moving() || placement_.remaining() != 0) return;
    ASSERT_TRUE(placement_.Settle().ok());
    ++counters_->settles;
    deaths_since_settle_ = 0;
    members_at_settle_ = live_.size();
    DropWhatIsNotInTheWriteSet();
    CheckSettled();
  }

  // Some nodes die: a stream's source or destination half of the time.
  void Kill(uint32_t count) {
    std::vector<NodeId> dead;
    for (uint32_t i = 0; i < count && live_.size() > dead.size() + 1; ++i) {
      NodeId victim;
      if (!streams_.empty() && Pick(2) == 0) {
        const Stream& s = std::next(streams_.begin(), Pick(uint32_t(streams_.size())))->second;
        victim = Pick(2) ? s.transfer.source : s.transfer.destination;
      } else {
        victim = std::next(live_.begin(), Pick(uint32_t(live_.size())))->first;
      }
      if (std::ranges::count(dead, victim) == 0) dead.push_back(victim);
    }
    if (dead.empty()) return;
    for (const auto& [id, s] : streams_) {
      counters_->source_deaths_mid_stream += std::ranges::count(dead, s.transfer.source);
      counters_->destination_deaths_mid_stream += std::ranges::count(dead, s.transfer.destination);
    }
    Change({}, dead);
  }

  void Join(uint32_t count) {
    if (live_.size() >= 12) return;
    std::vector<NodeId> joined;
    for (uint32_t i = 0; i < count; ++i) joined.push_back(next_id_++);
    Change(joined, {});
  }

  void Replace() {  // one dies and one joins in the same epoch
    if (live_.size() < 2) return Join(1);
    NodeId victim = std::next(live_.begin(), Pick(uint32_t(live_.size())))->first;
    Change({next_id_++}, {victim});
  }

  void Change(const std::vector<NodeId>& joined, const std::vector<NodeId>& dead) {
    if (placement_.moving()) ++counters_->changes_mid_move;
    auto next = placement_.target().Change(joined, dead);
    ASSERT_TRUE(next.ok());
    std::vector<Transfer> done_before;
    for (const Transfer& t : placement_.plan().transfers) {
      if (placement_.IsDone(t)) done_before.push_back(t);
    }
    ASSERT_TRUE(placement_.MoveTo(*next).ok());
    for (NodeId n : dead) live_.erase(n);
    for (NodeId n : joined) live_[n];
    deaths_since_settle_ += uint32_t(dead.size());
    counters_->deaths += dead.size();
    counters_->joins += joined.size();
    for (const Transfer& t : placement_.plan().transfers) {
      if (!placement_.IsDone(t)) continue;
      ++counters_->kept_done;
      // Kept only for a destination that finished under the previous target.
      ASSERT_TRUE(std::ranges::any_of(done_before, [&](const Transfer& d) {
        return d.partition == t.partition && d.destination == t.destination;
      }));
    }
    CheckPlan();
    // Lost partitions: allowed only after min(r, n) deaths since the last
    // settle, and only if every settled owner is dead.
    const Plan& plan = placement_.plan();
    if (!plan.lost.empty()) {
      ASSERT_GE(deaths_since_settle_, SafeDeaths()) << "data lost after fewer than r deaths";
    }
    for (uint32_t p : plan.lost) {
      for (NodeId n : placement_.settled().OwnersOf(p)) ASSERT_FALSE(live_.count(n)) << "lost with a live holder";
      if (lost_.insert(p).second) ++counters_->lost_partitions;
      for (auto it = acked_.begin(); it != acked_.end();) {
        if (PartitionOfKey(it->first) == p) {
          ++counters_->lost_writes;
          it = acked_.erase(it);
        } else {
          ++it;
        }
      }
    }
    // Streams go on only if the plan still has them, pending, from the same source.
    for (auto it = streams_.begin(); it != streams_.end();) {
      const Transfer& t = it->second.transfer;
      bool keep = std::ranges::binary_search(plan.transfers, t) && !placement_.IsDone(t);
      it = keep ? std::next(it) : streams_.erase(it);
    }
    for (const Transfer& t : placement_.Remaining()) streams_.try_emplace({t.partition, t.destination}, Stream{t, 0});
    DropWhatIsNotInTheWriteSet();
    if (placement_.remaining() == 0 && Pick(2) == 0) Settle();
  }

  void DropWhatIsNotInTheWriteSet() {
    for (auto& [n, node] : live_) {
      for (auto it = node.partitions.begin(); it != node.partitions.end();) {
        bool member = std::ranges::count(placement_.WriteSet(it->first), n) != 0;
        it = member ? std::next(it) : node.partitions.erase(it);
      }
    }
    if (!placement_.moving()) lost_.clear();
  }

  // Sources hold the partition; destinations own it in T and do not hold it.
  void CheckPlan() {
    for (const Transfer& t : placement_.plan().transfers) {
      std::vector<NodeId> holders = placement_.Holders(t.partition);
      ASSERT_TRUE(std::ranges::count(holders, t.source)) << "source is not a holder";
      ASSERT_FALSE(std::ranges::count(holders, t.destination)) << "destination holds it already";
      ASSERT_TRUE(placement_.target().Owns(t.destination, t.partition));
      ASSERT_TRUE(live_.count(t.source) && live_.count(t.destination));
    }
  }

  const Cell* Find(NodeId n, uint32_t p, uint64_t key) const {
    auto node = live_.find(n);
    if (node == live_.end()) return nullptr;
    auto part = node->second.partitions.find(p);
    if (part == node->second.partitions.end()) return nullptr;
    auto cell = part->second.find(key);
    return cell == part->second.end() ? nullptr : &cell->second;
  }

  // (b) at every step: each holder, and each destination that finished,
  // holds the latest acknowledged version of every key.
  void CheckHolders() {
    for (const auto& [key, version] : acked_) {
      uint32_t p = PartitionOfKey(key);
      std::vector<NodeId> must = placement_.Holders(p);
      for (const Transfer& t : placement_.plan().transfers) {
        if (t.partition == p && placement_.IsDone(t)) must.push_back(t.destination);
      }
      ASSERT_FALSE(must.empty()) << "an acknowledged write has no holder";
      for (NodeId n : must) {
        const Cell* cell = Find(n, p, key);
        ASSERT_TRUE(cell != nullptr) << "node " << n << " lacks key " << key;
        ASSERT_EQ(cell->version, version) << "node " << n << " key " << key;
      }
    }
  }

  // (a) after a settle: every key has exactly min(r, n) copies, on its owners.
  void CheckSettled() {
    ASSERT_FALSE(placement_.moving());
    size_t copies_wanted = std::min<size_t>(config_.replication, live_.size());
    size_t short_keys = 0;
    for (const auto& [key, version] : acked_) {
      uint32_t p = PartitionOfKey(key);
      std::vector<NodeId> holding;
      for (const auto& [n, node] : live_) {
        const Cell* cell = Find(n, p, key);
        if (cell != nullptr) {
          ASSERT_EQ(cell->version, version);
          holding.push_back(n);
        }
      }
      short_keys += holding.size() < copies_wanted;
      auto owners = placement_.target().OwnersOf(p);
      std::vector<NodeId> sorted_owners(owners.begin(), owners.end());
      std::sort(sorted_owners.begin(), sorted_owners.end());
      ASSERT_EQ(holding, sorted_owners) << "key " << key;
    }
    ASSERT_EQ(short_keys, 0u);
  }

  RingConfig config_;
  std::mt19937_64 rng_;
  uint32_t keys_;
  Counters* counters_;
  Placement placement_;
  std::map<NodeId, Node> live_;
  NodeId next_id_;
  std::map<std::pair<uint32_t, NodeId>, Stream> streams_;  // by (partition, destination)
  std::map<uint64_t, uint64_t> acked_;                     // key -> latest acknowledged version
  std::set<uint32_t> lost_;
  uint64_t next_version_ = 1;
  uint32_t deaths_since_settle_ = 0;
  size_t members_at_settle_ = 0;
};

// Thousands of random histories (fixed seeds), r in {1, 2, 3}.
TEST(DhtSimulation, RandomMembershipHistoriesKeepEveryAcknowledgedWrite) {
  DhtSim::Counters counters;
  for (uint64_t seed = 1; seed <= 3000 && !HasFatalFailure(); ++seed) {
    uint32_t r = 1 + uint32_t(seed % 3);
    RingConfig config{
        .replication = r, .tokens_per_node = 1 + uint32_t(seed % 16), .partition_bits = 3 + uint32_t(seed % 4)};
    uint32_t nodes = 1 + uint32_t((seed / 3) % 7);
    SCOPED_TRACE("seed " + std::to_string(seed));
    DhtSim(config, nodes, seed, 40, &counters).Run(120);
  }
  // The histories went through what they are meant to.
  EXPECT_EQ(counters.histories, 3000u);
  EXPECT_GT(counters.writes, 100000u);
  EXPECT_GT(counters.source_deaths_mid_stream, 100u);
  EXPECT_GT(counters.destination_deaths_mid_stream, 100u);
  EXPECT_GT(counters.changes_mid_move, 1000u);
  EXPECT_GT(counters.kept_done, 100u);
  EXPECT_GT(counters.settles, 1000u);
  EXPECT_GT(counters.lost_partitions, 0u);  // r = 1, and r deaths between settles, do lose data
  RecordProperty("writes", std::to_string(counters.writes));
  RecordProperty("transfers", std::to_string(counters.transfers_completed));
  RecordProperty("lost_writes", std::to_string(counters.lost_writes));
}

}  // namespace
}  // namespace fox::ebb
