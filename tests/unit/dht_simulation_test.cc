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
#include "dht_placement.h"  // ebb/ (internal)
#include "fox/ebb/dht_ring.h"
#include "dht_test_util.h"

namespace fox::ebb {
namespace {

using dht_test::KeyHash;
using dht_test::MakeRing;
using dht_test::Nodes;

// N simulated nodes, each holding partition -> key -> (version, value);
// writes through the partition's primary (the first holder, as in the Dht:
// requests go to the current ring's first owner), which applies a write at
// once and sends it to the rest of the write set it computed then, some of
// them steps later: after a change, and after streams have begun (the
// shipped primary learns a new ring later than other nodes, and its copies
// are on their way); streams that copy a source's
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
    uint64_t changes = 0, late_writes = 0, late_across_change = 0, retried_writes = 0;
  };

  struct Options {
    // Never let min(r, n) nodes die between settles (a death that would is
    // skipped), so nothing may be lost.
    bool careful = false;
    // The shipped Dht's fence (replication.cc, dht_ring.cc's rule 1): a
    // write on its way when the membership changed is refused and sent
    // again to the write set of the new rings. Without it, writes are lost.
    bool fence = true;
  };

  DhtSim(RingConfig config, uint32_t nodes, uint64_t seed, uint32_t keys, Counters* counters, Options options)
      : careful_(options.careful),
        fence_(options.fence),
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

  // Runs a history of `steps` random steps, then lets every write arrive
  // and the move settle. Returns the first broken invariant, or "".
  std::string Run(int steps) {
    for (int i = 0; i < steps && !::testing::Test::HasFatalFailure(); ++i) {
      RandomStep();
      if (broken_.empty()) broken_ = HoldersBroken();
      if (!broken_.empty()) return broken_;
    }
    DeliverAll();
    Drain();
    if (placement_.moving()) Settle();
    if (broken_.empty()) broken_ = HoldersBroken();
    return broken_.empty() ? SettledBroken() : broken_;
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
  // A write its primary applied and has sent to `to` (the write set when
  // it was applied, but the primary): acknowledged once they all hold it.
  struct Pending {
    uint64_t key;
    uint32_t partition;
    NodeId primary;
    Cell cell;
    std::vector<NodeId> to;
    uint64_t changes_at_start;
    uint64_t losses_at_start;  // of its partition (losses_)
  };

  uint32_t Pick(uint32_t n) { return uint32_t(rng_() % n); }
  uint32_t PartitionOfKey(uint64_t key) const { return placement_.target().PartitionOf(KeyHash(key)); }
  uint32_t SafeDeaths() const { return std::min<uint32_t>(config_.replication, uint32_t(members_at_settle_)); }

  void RandomStep() {
    uint32_t roll = Pick(100);
    if (roll < 40) return Write(Pick(keys_));
    if (roll < 50) return DeliverOne();
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

  // The primary of `p`: its first holder (the current ring's first owner:
  // a death only removes nodes from a preference list, and a join routes
  // by S until it settles), or the first owner in T if nothing was held.
  NodeId PrimaryOf(uint32_t p) const {
    std::vector<NodeId> holders = placement_.Holders(p);
    return holders.empty() ? placement_.WriteSet(p).front() : holders.front();
  }

  static void Merge(Data& data, uint64_t key, Cell cell) {
    auto [it, fresh] = data.try_emplace(key, cell);
    if (!fresh && it->second.version < cell.version) it->second = cell;
  }

  // The primary applies a write; a third of them reach the other members
  // some steps later (Deliver).
  void Write(uint64_t key) {
    uint32_t p = PartitionOfKey(key);
    std::vector<NodeId> set = placement_.WriteSet(p);
    if (set.empty()) {
      ++counters_->refused_writes;  // lost partition: refused until the move settles
      return;
    }
    uint64_t version = next_version_++;
    Pending w{key, p, PrimaryOf(p), Cell{version, version * 7}, {}, counters_->changes, losses_[p]};
    ASSERT_TRUE(live_.count(w.primary)) << "the primary is dead";
    Merge(live_[w.primary].partitions[p], key, w.cell);
    for (NodeId n : set) {
      if (n != w.primary) w.to.push_back(n);
    }
    ++counters_->writes;
    if (!w.to.empty() && Pick(3) == 0) {
      pending_.push_back(std::move(w));
      return;
    }
    Deliver(w);
  }

  // The rest of the write set receives a write, and it is acknowledged. A
  // dead member makes the primary send the key to the current write set
  // (the shipped Replicate, once its ring dropped the node), as does the
  // fence; without the fence, members that left the write set ignore it.
  // A dead primary: the client retries at the new primary, a write anew.
  void Deliver(const Pending& w) {
    if (!live_.count(w.primary)) {
      ++counters_->retried_writes;
      return Write(w.key);
    }
    if (w.changes_at_start != counters_->changes) ++counters_->late_across_change;
    if (w.losses_at_start != losses_[w.partition]) {
      ++counters_->lost_writes;  // every holder died meanwhile: what it acknowledges is gone
      return;
    }
    std::vector<NodeId> now = placement_.WriteSet(w.partition);
    if (now.empty()) return;  // lost meanwhile: never acknowledged
    // The fence: the membership changed since the primary sent it, and
    // every member has heard of it (this simulation's changes reach all
    // nodes at once): refused, sent again to the new write set.
    bool resend = fence_ && w.changes_at_start != counters_->changes;
    for (NodeId n : w.to) {
      if (!live_.count(n)) {
        resend = true;
      } else if (std::ranges::count(now, n) != 0) {
        Merge(live_[n].partitions[w.partition], w.key, w.cell);
      }
    }
    if (resend) {
      for (NodeId n : now) Merge(live_[n].partitions[w.partition], w.key, w.cell);
    }
    uint64_t& acked = acked_[w.key];
    acked = std::max(acked, w.cell.version);  // every member holds it: acknowledged
  }

  void DeliverOne() {
    if (pending_.empty()) return Write(Pick(keys_));
    size_t i = Pick(uint32_t(pending_.size()));
    Pending w = std::move(pending_[i]);
    pending_.erase(pending_.begin() + long(i));
    ++counters_->late_writes;
    Deliver(w);
  }

  void DeliverAll() {
    while (!pending_.empty() && !::testing::Test::HasFatalFailure()) DeliverOne();
  }

  // Copies up to `chunk` keys of the source's current content from the cursor.
  void Advance(std::pair<uint32_t, NodeId> id, uint32_t chunk) {
    Stream& s = streams_.at(id);
    const Data& from = live_.at(s.transfer.source).partitions[s.transfer.partition];
    Data& to = live_.at(s.transfer.destination).partitions[s.transfer.partition];
    auto it = from.lower_bound(s.cursor);
    for (uint32_t i = 0; i < chunk && it != from.end(); ++i, ++it) {
      Merge(to, it->first, it->second);
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
    // (Else a write not acknowledged may be partly there.)
    if (pending_.empty() && broken_.empty()) broken_ = SettledBroken();
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
    ++counters_->changes;
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
      if (lost_.insert(p).second) {
        ++counters_->lost_partitions;
        ++losses_[p];
      }
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
  // holds the latest acknowledged version of every key (or a newer one, a
  // write still on its way). The first that does not, or "".
  std::string HoldersBroken() const {
    for (const auto& [key, version] : acked_) {
      uint32_t p = PartitionOfKey(key);
      std::vector<NodeId> must = placement_.Holders(p);
      for (const Transfer& t : placement_.plan().transfers) {
        if (t.partition == p && placement_.IsDone(t)) must.push_back(t.destination);
      }
      if (must.empty()) return "an acknowledged write of key " + std::to_string(key) + " has no holder";
      for (NodeId n : must) {
        const Cell* cell = Find(n, p, key);
        if (cell == nullptr) return "node " + std::to_string(n) + " lacks key " + std::to_string(key);
        if (cell->version < version) {
          return "node " + std::to_string(n) + " holds version " + std::to_string(cell->version) + " of key " +
                 std::to_string(key) + ", acknowledged " + std::to_string(version);
        }
      }
    }
    return "";
  }

  // (a) after a settle, every write arrived: every key has exactly min(r, n)
  // copies, on its owners, of its acknowledged version. The first key that
  // has not, or "".
  std::string SettledBroken() const {
    if (placement_.moving()) return "not settled";
    for (const auto& [key, version] : acked_) {
      uint32_t p = PartitionOfKey(key);
      std::vector<NodeId> holding;
      for (const auto& [n, node] : live_) {
        const Cell* cell = Find(n, p, key);
        if (cell == nullptr) continue;
        if (cell->version != version) {
          return "node " + std::to_string(n) + " holds version " + std::to_string(cell->version) + " of key " +
                 std::to_string(key) + ", acknowledged " + std::to_string(version);
        }
        holding.push_back(n);
      }
      auto owners = placement_.target().OwnersOf(p);
      std::vector<NodeId> sorted_owners(owners.begin(), owners.end());
      std::sort(sorted_owners.begin(), sorted_owners.end());
      if (holding != sorted_owners) {
        return "key " + std::to_string(key) + " is on " + std::to_string(holding.size()) + " nodes, not on its " +
               std::to_string(owners.size()) + " owners";
      }
    }
    return "";
  }

  bool careful_;
  bool fence_;
  std::string broken_;  // the first broken invariant a settle found
  RingConfig config_;
  std::mt19937_64 rng_;
  uint32_t keys_;
  Counters* counters_;
  Placement placement_;
  std::map<NodeId, Node> live_;
  NodeId next_id_;
  std::map<std::pair<uint32_t, NodeId>, Stream> streams_;  // by (partition, destination)
  std::map<uint64_t, uint64_t> acked_;                     // key -> latest acknowledged version
  std::map<uint32_t, uint64_t> losses_;                    // partition -> times it was lost
  std::vector<Pending> pending_;                           // applied at their primary, on their way
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
    ASSERT_EQ(DhtSim(config, nodes, seed, 40, &counters, {}).Run(120), "");
  }
  // The histories went through what they are meant to.
  EXPECT_EQ(counters.histories, 3000u);
  EXPECT_GT(counters.writes, 100000u);
  EXPECT_GT(counters.source_deaths_mid_stream, 100u);
  EXPECT_GT(counters.destination_deaths_mid_stream, 100u);
  EXPECT_GT(counters.changes_mid_move, 1000u);
  EXPECT_GT(counters.kept_done, 100u);
  EXPECT_GT(counters.settles, 1000u);
  EXPECT_GT(counters.late_across_change, 1000u);
  EXPECT_GT(counters.retried_writes, 100u);
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
    ASSERT_EQ(DhtSim(config, nodes, seed, 40, &counters, {.careful = true}).Run(120), "");
  }
  EXPECT_GT(counters.deaths, 1000u);
  EXPECT_GT(counters.source_deaths_mid_stream + counters.destination_deaths_mid_stream, 100u);
  EXPECT_EQ(counters.lost_partitions, 0u);
  EXPECT_EQ(counters.lost_writes, 0u);
}

// The fence is what keeps late writes: without it, the same careful
// histories lose acknowledged writes. A write on its way when a node joins
// reaches only the old owners; a holder that streams the partition to the
// joiner before the write reaches it leaves the joiner without it (seen on
// hosted nodes: tests/cluster's dht_join once read 4599 of its 4600 keys),
// and a write on its way across a settle misses the next join's stream
// from the new primary the same way.
TEST(DhtSimulation, WithoutTheFenceLateWritesAreLost) {
  DhtSim::Counters counters;
  uint64_t broken = 0, missing = 0;
  for (uint64_t seed = 1; seed <= 500; ++seed) {
    uint32_t r = 2 + uint32_t(seed % 2);
    RingConfig config{
        .replication = r, .tokens_per_node = 1 + uint32_t(seed % 16), .partition_bits = 3 + uint32_t(seed % 4)};
    uint32_t nodes = 2 + uint32_t((seed / 2) % 7);
    std::string what = DhtSim(config, nodes, seed, 40, &counters, {.careful = true, .fence = false}).Run(120);
    broken += !what.empty();
    missing += what.find("lacks key") != std::string::npos;
  }
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_GT(broken, 5u);
  EXPECT_GT(missing, 0u);
  RecordProperty("unfenced_histories_broken", std::to_string(broken));
}

}  // namespace
}  // namespace fox::ebb
