// The Dht's placement under random membership histories: simulated nodes
// holding replicas, checked against the invariants of dht_ring.cc's design
// comment: holders hold every acknowledged write, a settled Dht has exactly
// min(r, n) copies of each key on its owners, data is lost only after
// min(r, n) deaths since the last settle.
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
#include "dht_test_util.h"

namespace fox::ebb {
namespace {

using dht_test::KeyHash;
using dht_test::MakeRing;
using dht_test::Nodes;

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

  // careful: never let min(r, n) nodes die between settles (a death that
  // would is skipped), so nothing may be lost.
  DhtSim(RingConfig config, uint32_t nodes, uint64_t seed, uint32_t keys, Counters* counters, bool careful = false)
      : careful_(careful),
        config_(config),
        rng_(seed),
        keys_(keys),
        counters_(counters),
        placement_(MakeRing(config, Nodes(1, nodes))) {
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
    if (careful_ && deaths_since_settle_ + dead.size() >= SafeDeaths()) return;
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
    if (live_.size() < 2 || (careful_ && deaths_since_settle_ + 1 >= SafeDeaths())) return Join(1);
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

  bool careful_;
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

// (b) proper: with fewer than min(r, n) deaths between settles, no
// acknowledged write is ever lost (r in {2, 3}; r = 1 allows no death).
TEST(DhtSimulation, FewerThanRDeathsBetweenSettlesLoseNothing) {
  DhtSim::Counters counters;
  for (uint64_t seed = 1; seed <= 2000 && !HasFatalFailure(); ++seed) {
    uint32_t r = 2 + uint32_t(seed % 2);
    RingConfig config{
        .replication = r, .tokens_per_node = 1 + uint32_t(seed % 16), .partition_bits = 3 + uint32_t(seed % 4)};
    uint32_t nodes = 2 + uint32_t((seed / 2) % 7);
    SCOPED_TRACE("seed " + std::to_string(seed));
    DhtSim(config, nodes, seed, 40, &counters, /*careful=*/true).Run(120);
  }
  EXPECT_GT(counters.deaths, 1000u);
  EXPECT_GT(counters.source_deaths_mid_stream + counters.destination_deaths_mid_stream, 100u);
  EXPECT_EQ(counters.lost_partitions, 0u);
  EXPECT_EQ(counters.lost_writes, 0u);
}

}  // namespace
}  // namespace fox::ebb
