// The Dht's item map and wire format (ebb/include/fox/ebb/dht_items.h):
// memcached's store modes, versions as CAS, replica order by version,
// tombstones, expiry, and decoders that refuse bad input.
#include "fox/ebb/dht_items.h"

#include <gtest/gtest.h>

#include <atomic>

#include <random>

#include "fox/ebb/dht_hash.h"
#include "fox/ebb/dht_ring.h"

namespace fox::ebb {
namespace {

constexpr uint64_t kSec = 1'000'000'000;

DhtWrite W(std::string key, std::string value, DhtWrite::Mode mode = DhtWrite::Mode::kSet, uint64_t cas = 0) {
  DhtWrite w;
  w.key = std::move(key);
  w.value = std::move(value);
  w.mode = mode;
  w.cas = cas;
  return w;
}

TEST(DhtItems, SetGetVersionsGrow) {
  DhtItems items;
  auto a = items.Write(W("k", "one"), 0);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->version, 1u);
  auto b = items.Write(W("k", "two"), 0);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->version, 2u);
  ASSERT_NE(items.Find("k", 0), nullptr);
  EXPECT_EQ(items.Find("k", 0)->value, "two");
  EXPECT_EQ(items.Find("other", 0), nullptr);
}

TEST(DhtItems, AddReplaceCas) {
  DhtItems items;
  EXPECT_EQ(items.Write(W("k", "x", DhtWrite::Mode::kReplace), 0).error(), Error::kNotFound);
  EXPECT_EQ(items.Write(W("k", "x", DhtWrite::Mode::kCas, 1), 0).error(), Error::kNotFound);
  auto added = items.Write(W("k", "x", DhtWrite::Mode::kAdd), 0);
  ASSERT_TRUE(added.ok());
  EXPECT_EQ(items.Write(W("k", "y", DhtWrite::Mode::kAdd), 0).error(), Error::kAlreadyExists);
  EXPECT_EQ(items.Write(W("k", "y", DhtWrite::Mode::kCas, added->version + 1), 0).error(), Error::kAlreadyExists);
  auto cased = items.Write(W("k", "y", DhtWrite::Mode::kCas, added->version), 0);
  ASSERT_TRUE(cased.ok());
  EXPECT_GT(cased->version, added->version);
  EXPECT_TRUE(items.Write(W("k", "z", DhtWrite::Mode::kReplace), 0).ok());
  EXPECT_EQ(items.Find("k", 0)->value, "z");
}

TEST(DhtItems, BadWritesRefused) {
  DhtItems items;
  EXPECT_EQ(items.Write(W("", "x"), 0).error(), Error::kInvalidArgument);
  EXPECT_EQ(items.Write(W(std::string(kDhtMaxKey + 1, 'k'), "x"), 0).error(), Error::kInvalidArgument);
  EXPECT_EQ(items.Write(W("k", std::string(kDhtMaxValue + 1, 'v')), 0).error(), Error::kInvalidArgument);
  EXPECT_TRUE(items.Write(W(std::string(kDhtMaxKey, 'k'), std::string(kDhtMaxValue, 'v')), 0).ok());
  DhtWrite bad = W("k", "x");
  bad.mode = DhtWrite::Mode(uint8_t(DhtWrite::kLastMode) + 1);
  EXPECT_EQ(items.Write(bad, 0).error(), Error::kInvalidArgument);
}

TEST(DhtItems, DeleteLeavesTombstoneAndAddWorksAgain) {
  DhtItems items;
  EXPECT_EQ(items.Delete("k", 0).error(), Error::kNotFound);
  ASSERT_TRUE(items.Write(W("k", "x"), 0).ok());
  auto tomb = items.Delete("k", 0);
  ASSERT_TRUE(tomb.ok());
  EXPECT_TRUE(tomb->tombstone);
  EXPECT_EQ(tomb->version, 2u);
  EXPECT_EQ(items.Find("k", 0), nullptr);
  EXPECT_EQ(items.size(), 1u);
  EXPECT_EQ(items.live(0), 0u);
  auto again = items.Write(W("k", "y", DhtWrite::Mode::kAdd), 0);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->version, 3u);  // above the tombstone: replicas take it
}

TEST(DhtItems, Expiry) {
  DhtItems items;
  DhtWrite w = W("k", "x");
  w.ttl_s = 2;
  ASSERT_TRUE(items.Write(w, 10 * kSec).ok());
  EXPECT_NE(items.Find("k", 11 * kSec), nullptr);
  EXPECT_EQ(items.Find("k", 12 * kSec), nullptr);
  EXPECT_TRUE(items.Write(W("k", "y", DhtWrite::Mode::kAdd), 12 * kSec).ok());
}

// Replicas end in the primary's order whatever order the states arrive in.
TEST(DhtItems, ReplicaAppliesNewestWhateverTheOrder) {
  DhtItems primary;
  std::vector<DhtEntry> states;
  for (int i = 0; i < 20; ++i) {
    auto e = i % 7 == 6 ? primary.Delete("k", 0) : primary.Write(W("k", "v" + std::to_string(i)), 0);
    if (e.ok()) states.push_back(*primary.Held("k"));  // the state a primary replicates (Write answers less)
  }
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    std::shuffle(states.begin(), states.end(), rng);
    DhtItems replica;
    for (const auto& s : states) replica.Apply("k", s);
    ASSERT_NE(replica.Held("k"), nullptr);
    EXPECT_EQ(*replica.Held("k"), *primary.Held("k"));
  }
  DhtItems replica;
  DhtEntry newer{.version = 5, .value = "new"};
  DhtEntry older{.version = 4, .value = "old"};
  EXPECT_TRUE(replica.Apply("k", newer));
  EXPECT_FALSE(replica.Apply("k", older));
  EXPECT_FALSE(replica.Apply("k", newer));  // a duplicate changes nothing
  EXPECT_EQ(replica.Find("k", 0)->value, "new");
}

// r = 3: the primary P died after its write (version 5) reached replica C
// but not replica B, which became primary and wrote its own version 5. C
// follows B: an equal version from the current primary replaces; the
// same state again, or an equal version from anyone else, changes nothing.
TEST(DhtItems, EqualVersionFromTheNewPrimaryReplaces) {
  DhtItems c;
  ASSERT_TRUE(c.Apply("k", DhtEntry{.version = 4, .value = "acked"}));
  ASSERT_TRUE(c.Apply("k", DhtEntry{.version = 5, .value = "unacked, from the dead primary"}));
  DhtEntry from_b{.version = 5, .value = "new primary's"};
  EXPECT_FALSE(c.Apply("k", from_b, /*from_primary=*/false));
  EXPECT_TRUE(c.Apply("k", from_b, /*from_primary=*/true));
  EXPECT_FALSE(c.Apply("k", from_b, /*from_primary=*/true));  // a duplicate changes nothing
  EXPECT_EQ(c.Find("k", 0)->value, "new primary's");
  EXPECT_FALSE(c.Apply("k", DhtEntry{.version = 4, .value = "old"}, /*from_primary=*/true));
  EXPECT_TRUE(c.Apply("k", DhtEntry{.version = 5, .tombstone = true, .value = "dropped"}, /*from_primary=*/true));
  EXPECT_EQ(c.Find("k", 0), nullptr);
  EXPECT_TRUE(c.Held("k")->value.empty());
}

// A replica that took over as primary writes above every version it holds.
TEST(DhtItems, NewPrimaryContinuesAboveReplicatedVersions) {
  DhtItems replica;
  ASSERT_TRUE(replica.Apply("k", DhtEntry{.version = 41, .value = "x"}));
  auto next = replica.Write(W("k", "y", DhtWrite::Mode::kCas, 41), 0);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->version, 42u);
}

// Versions never wrap: a state at the last version takes no more writes,
// and the wire refuses versions past it.
TEST(DhtItems, VersionsNeverWrap) {
  DhtItems items;
  ASSERT_TRUE(items.Apply("k", DhtEntry{.version = kDhtMaxVersion, .value = "x"}));
  EXPECT_EQ(items.Write(W("k", "y"), 0).error(), Error::kOutOfRange);
  EXPECT_EQ(items.Delete("k", 0).error(), Error::kOutOfRange);
  EXPECT_EQ(items.Find("k", 0)->value, "x");
  auto bytes = dht_wire::EncodeReplicate("k", DhtEntry{.version = kDhtMaxVersion + 1}, 0);
  EXPECT_EQ(dht_wire::DecodeReplicate(bytes.data(), bytes.size(), 0).error(), Error::kInvalidArgument);
}

// memcached's other mutations, applied by the primary.
TEST(DhtItems, AppendPrependKeepFlagsAndExpiry) {
  DhtItems items;
  using M = DhtWrite::Mode;
  EXPECT_EQ(items.Write(W("k", "x", M::kAppend), 0).error(), Error::kNotFound);
  DhtWrite set = W("k", "mid");
  set.flags = 7;
  set.ttl_s = 100;
  ASSERT_TRUE(items.Write(set, 0).ok());
  auto a = items.Write(W("k", ">>", M::kAppend), kSec);
  ASSERT_TRUE(a.ok());
  auto p = items.Write(W("k", "<<", M::kPrepend), kSec);
  ASSERT_TRUE(p.ok());
  EXPECT_GT(p->version, a->version);
  const DhtEntry* e = items.Find("k", 2 * kSec);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->value, "<<mid>>");
  EXPECT_EQ(e->flags, 7u);
  EXPECT_EQ(e->expiry_ns, 100 * kSec);
  EXPECT_EQ(items.Find("k", 100 * kSec), nullptr);
  // Past the value limit: refused, nothing changes.
  ASSERT_TRUE(items.Write(W("big", std::string(kDhtMaxValue, 'b')), 0).ok());
  EXPECT_EQ(items.Write(W("big", "!", M::kAppend), 0).error(), Error::kOutOfRange);
  EXPECT_EQ(items.Find("big", 0)->value.size(), kDhtMaxValue);
  // A cas check on append.
  DhtWrite stale = W("k", "z", M::kAppend, p->version - 1);
  stale.check_cas = true;
  EXPECT_EQ(items.Write(stale, kSec).error(), Error::kAlreadyExists);
  stale.cas = p->version;
  EXPECT_TRUE(items.Write(stale, kSec).ok());
}

TEST(DhtItems, IncrDecrAsMemcached) {
  DhtItems items;
  using M = DhtWrite::Mode;
  DhtWrite incr = W("n", "", M::kIncr);
  incr.delta = 5;
  EXPECT_EQ(items.Write(incr, 0).error(), Error::kNotFound);
  incr.create = true;
  incr.initial = 10;
  auto created = items.Write(incr, 0);  // created holding the initial value, not incremented
  ASSERT_TRUE(created.ok());
  EXPECT_EQ(created->value, "10");
  auto up = items.Write(incr, 0);
  ASSERT_TRUE(up.ok());
  EXPECT_EQ(up->value, "15");
  DhtWrite decr = W("n", "", M::kDecr);
  decr.delta = 100;
  EXPECT_EQ(items.Write(decr, 0)->value, "0");  // floors at 0
  ASSERT_TRUE(items.Write(W("n", "18446744073709551615"), 0).ok());
  incr.delta = 2;
  EXPECT_EQ(items.Write(incr, 0)->value, "1");       // wraps at 2^64
  ASSERT_TRUE(items.Write(W("n", "12  "), 0).ok());  // trailing spaces, as memcached leaves them
  EXPECT_EQ(items.Write(incr, 0)->value, "14");
  for (const char* bad : {"abc", "", "-1", "18446744073709551616", "1 2", "123456789012345678901"}) {
    ASSERT_TRUE(items.Write(W("n", bad), 0).ok());
    EXPECT_EQ(items.Write(incr, 0).error(), Error::kUnsupported) << bad;
    EXPECT_EQ(items.Find("n", 0)->value, bad);
  }
}

TEST(DhtItems, TouchDeleteWithCasAndExpiredAtOnce) {
  DhtItems items;
  using M = DhtWrite::Mode;
  DhtWrite touch = W("k", "", M::kTouch);
  touch.ttl_s = 5;
  EXPECT_EQ(items.Write(touch, 0).error(), Error::kNotFound);
  auto set = items.Write(W("k", "v"), 0);
  auto touched = items.Write(touch, kSec);
  ASSERT_TRUE(touched.ok());
  EXPECT_EQ(touched->value, "v");
  EXPECT_NE(items.Find("k", 5 * kSec), nullptr);
  EXPECT_EQ(items.Find("k", 6 * kSec), nullptr);
  ASSERT_TRUE(items.Write(W("k", "v"), 0).ok());
  DhtWrite del = W("k", "", M::kDelete, set->version);  // an old cas
  del.check_cas = true;
  EXPECT_EQ(items.Write(del, 0).error(), Error::kAlreadyExists);
  del.cas = items.Find("k", 0)->version;
  EXPECT_TRUE(items.Write(del, 0).ok());
  EXPECT_EQ(items.Find("k", 0), nullptr);
  EXPECT_EQ(items.Write(del, 0).error(), Error::kNotFound);
  // A negative exptime stores an item that is gone at once.
  DhtWrite expired = W("e", "v");
  expired.ttl_s = DhtWrite::kExpired;
  EXPECT_TRUE(items.Write(expired, kSec).ok());
  EXPECT_EQ(items.Find("e", kSec), nullptr);
  EXPECT_TRUE(items.Write(W("e", "v", M::kAdd), kSec).ok());
}

// libFOX's waits as the primary applies them: kBusy is "not yet".
TEST(DhtItems, TakeAndWait) {
  DhtItems items;
  using M = DhtWrite::Mode;
  DhtWrite take = W("sem", "", M::kTake);
  take.delta = 2;
  EXPECT_EQ(items.Write(take, 0).error(), Error::kBusy);  // absent: not yet
  ASSERT_TRUE(items.Write(W("sem", "1"), 0).ok());
  EXPECT_EQ(items.Write(take, 0).error(), Error::kBusy);  // 1 < 2
  EXPECT_EQ(items.Find("sem", 0)->value, "1");
  ASSERT_TRUE(items.Write(W("sem", "5"), 0).ok());
  auto taken = items.Write(take, 0);
  ASSERT_TRUE(taken.ok());
  EXPECT_EQ(taken->value, "3");
  EXPECT_EQ(items.Find("sem", 0)->value, "3");
  DhtWrite wait = W("sem", "", M::kWait);
  wait.delta = 3;
  uint64_t version = items.Held("sem")->version;
  auto seen = items.Write(wait, 0);
  ASSERT_TRUE(seen.ok());
  EXPECT_EQ(seen->value, "3");
  EXPECT_EQ(items.Held("sem")->version, version);  // a wait changes nothing
  wait.delta = 4;
  EXPECT_EQ(items.Write(wait, 0).error(), Error::kBusy);
  DhtWrite exists = W("other", "", M::kWait);  // delta 0: any live value
  EXPECT_EQ(items.Write(exists, 0).error(), Error::kBusy);
  ASSERT_TRUE(items.Write(W("other", "text"), 0).ok());
  EXPECT_EQ(items.Write(exists, 0)->value, "text");
  DhtWrite bad = W("other", "", M::kTake);
  bad.delta = 1;
  EXPECT_EQ(items.Write(bad, 0).error(), Error::kUnsupported);
  exists.delta = 1;
  EXPECT_EQ(items.Write(exists, 0).error(), Error::kUnsupported);
}

// Tombstones are handed out oldest first, once each, only while they are
// still the key's state; Collect forgets exactly the tombstone of that
// version, and the key then starts again at version 1.
TEST(DhtItems, OldTombstonesAreHandedOutOnceAndCollectedByVersion) {
  DhtItems items;
  for (const char* k : {"a", "b", "c", "d"}) ASSERT_TRUE(items.Write(W(k, "v"), 0).ok());
  ASSERT_TRUE(items.Delete("a", 0).ok());
  ASSERT_TRUE(items.Delete("b", 0).ok());
  uint64_t marked = items.generation();
  ASSERT_TRUE(items.Delete("c", 0).ok());
  ASSERT_TRUE(items.Write(W("b", "back"), 0).ok());  // b is an item again
  EXPECT_EQ(items.tombstones(), 2u);
  auto old = items.OldTombstones(marked);
  ASSERT_EQ(old.size(), 1u);  // a; not b (written since), not c (newer than the mark)
  EXPECT_EQ(old[0].key, "a");
  EXPECT_EQ(old[0].version, items.Held("a")->version);
  EXPECT_TRUE(items.OldTombstones(marked).empty());  // handed out once
  EXPECT_FALSE(items.Collect("a", old[0].version + 1));
  EXPECT_FALSE(items.Collect("b", items.Held("b")->version));  // not a tombstone
  size_t bytes = items.bytes();
  EXPECT_TRUE(items.Collect("a", old[0].version));
  EXPECT_EQ(items.Held("a"), nullptr);
  EXPECT_EQ(items.bytes(), bytes - 1);
  EXPECT_EQ(items.size(), 3u);
  EXPECT_EQ(items.Write(W("a", "again"), 0)->version, 1u);
  // Requeued: handed out again after the marks that follow.
  auto c = items.OldTombstones(items.generation());
  ASSERT_EQ(c.size(), 1u);
  items.Requeue("c");
  EXPECT_EQ(items.tombstones(), 1u);
  EXPECT_TRUE(items.OldTombstones(marked).empty());
  ASSERT_EQ(items.OldTombstones(items.generation()).size(), 1u);
  // A replicated tombstone is numbered too; a newer one replaces the older's turn.
  DhtItems replica;
  ASSERT_TRUE(replica.Apply("k", DhtEntry{.version = 3, .tombstone = true}));
  uint64_t first = replica.generation();
  ASSERT_TRUE(replica.Apply("k", DhtEntry{.version = 4, .tombstone = true}));
  EXPECT_TRUE(replica.OldTombstones(first).empty());
  auto k = replica.OldTombstones(replica.generation());
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0].version, 4u);
  // Flushed items and dropped keys.
  DhtItems flushed;
  ASSERT_TRUE(flushed.Write(W("x", "1"), 0).ok());
  ASSERT_TRUE(flushed.Write(W("y", "2"), 0).ok());
  EXPECT_EQ(flushed.Flush(), 2u);
  EXPECT_EQ(flushed.tombstones(), 2u);
  EXPECT_TRUE(flushed.Drop("x"));
  EXPECT_EQ(flushed.tombstones(), 1u);
  auto y = flushed.OldTombstones(flushed.generation());
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].key, "y");
  EXPECT_TRUE(flushed.Collect("y", y[0].version));
  EXPECT_EQ(flushed.size(), 0u);
  EXPECT_EQ(flushed.bytes(), 0u);
}

TEST(DhtItems, FlushTombstonesEverythingAndCountsBytes) {
  DhtItems items;
  ASSERT_TRUE(items.Write(W("a", "12345"), 0).ok());
  ASSERT_TRUE(items.Write(W("bb", "xy"), 0).ok());
  EXPECT_EQ(items.bytes(), 1u + 5 + 2 + 2);
  EXPECT_EQ(items.stored(), 2u);
  uint64_t before = items.Held("a")->version;
  EXPECT_EQ(items.Flush(), 2u);
  EXPECT_EQ(items.stored(), 0u);
  EXPECT_EQ(items.bytes(), 1u + 2);  // the tombstones' keys
  EXPECT_TRUE(items.Held("a")->tombstone);
  EXPECT_EQ(items.Held("a")->version, before + 1);
  EXPECT_TRUE(items.Write(W("a", "new", DhtWrite::Mode::kAdd), 0).ok());
  EXPECT_EQ(items.stored(), 1u);
  // A replica holding the flushed tombstone takes the primary's write at that version.
  DhtItems replica;
  ASSERT_TRUE(replica.Apply("a", *items.Held("a")));
  EXPECT_EQ(replica.bytes(), 1u + 3);
}

TEST(DhtItems, ByteLimitRefusesGrowthNotShrinking) {
  DhtItems items;
  items.set_limit(100);
  ASSERT_TRUE(items.Write(W("k", std::string(90, 'v')), 0).ok());
  EXPECT_EQ(items.Write(W("j", std::string(20, 'v')), 0).error(), Error::kNoMemory);
  EXPECT_EQ(items.Write(W("k", "v", DhtWrite::Mode::kAppend), 0).ok(), true);  // 1 + 91 = 92
  EXPECT_EQ(items.Write(W("k", std::string(200, 'v')), 0).error(), Error::kNoMemory);
  EXPECT_TRUE(items.Write(W("k", "small"), 0).ok());
  EXPECT_TRUE(items.Write(W("j", std::string(20, 'v')), 0).ok());
  EXPECT_TRUE(items.Delete("k", 0).ok());
  EXPECT_EQ(items.bytes(), 1u + 1 + 20);
}

// Holders sharing a pool (a node's shards): the limit is on the pool's
// total, each holder's own bytes counted exactly, another's to within its
// slack (it adds its changes to the pool 64 KiB at a time).
TEST(DhtItems, SharedPoolLimitsTheTotalToWithinEachOthersSlack) {
  std::atomic<size_t> pool{0};
  DhtItems a, b;
  a.share_bytes(&pool);
  b.share_bytes(&pool);
  a.set_limit(300 * 1024);
  b.set_limit(300 * 1024);
  ASSERT_TRUE(a.Write(W("big", std::string(200 * 1024, 'v')), 0).ok());  // past the slack: in the pool now
  EXPECT_GE(pool.load(), 200u * 1024);
  EXPECT_EQ(b.Write(W("other", std::string(150 * 1024, 'v')), 0).error(), Error::kNoMemory);
  ASSERT_TRUE(b.Write(W("small", std::string(1000, 'v')), 0).ok());
  ASSERT_TRUE(a.Delete("big", 0).ok());  // 200 KiB less, past the slack: the pool shrinks at once
  EXPECT_LT(pool.load(), 64u * 1024);
  EXPECT_TRUE(b.Write(W("other", std::string(150 * 1024, 'v')), 0).ok());
  EXPECT_EQ(a.bytes() + b.bytes(), 3u /* big's tombstone key */ + 5 + 1000 + 5 + 150 * 1024);
}

// Exactly once: a write sent again under its name (after its primary died)
// is answered from the key's record, on the holder that applied it and on a
// replica that got the state, which becomes the primary; other writes and
// unnamed ones apply as usual; the record keeps the newest few.
TEST(DhtItems, NamedWritesApplyOnceAndTheRecordTravelsToReplicas) {
  DhtItems primary, replica;
  DhtWrite incr = W("n", "", DhtWrite::Mode::kIncr);
  incr.create = true;
  incr.initial = 10;
  incr.delta = 5;
  incr.request = (uint64_t(3) << 40) | 1;
  auto first = primary.Write(incr, 0);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->value, "10");  // created
  incr.request = (uint64_t(3) << 40) | 2;
  auto second = primary.Write(incr, 0);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->value, "15");
  auto again = primary.Write(incr, 0);  // the same request: not applied twice
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->value, "15");
  EXPECT_EQ(again->version, second->version);
  EXPECT_EQ(primary.Find("n", 0)->value, "15");
  EXPECT_EQ(primary.deduplicated(), 1u);
  // The state goes to a replica, which takes over as primary: the retry is
  // answered there too.
  auto bytes = dht_wire::EncodeReplicate("n", *primary.Held("n"), 0);
  auto state = dht_wire::DecodeReplicate(bytes.data(), bytes.size(), 0);
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->entry.applied, primary.Held("n")->applied);
  ASSERT_TRUE(replica.Apply("n", state->entry));
  auto retried = replica.Write(incr, 0);
  ASSERT_TRUE(retried.ok());
  EXPECT_EQ(retried->value, "15");
  EXPECT_EQ(replica.Find("n", 0)->value, "15");
  EXPECT_EQ(replica.deduplicated(), 1u);
  // An add applied before its primary died does not answer kAlreadyExists.
  DhtWrite add = W("a", "x", DhtWrite::Mode::kAdd);
  add.request = 99;
  auto added = replica.Write(add, 0);
  ASSERT_TRUE(added.ok());
  auto added_again = replica.Write(add, 0);
  ASSERT_TRUE(added_again.ok());
  EXPECT_EQ(added_again->version, added->version);
  add.request = 100;  // another client's add: refused as memcached would
  EXPECT_EQ(replica.Write(add, 0).error(), Error::kAlreadyExists);
  add.request = 0;  // unnamed: never deduplicated
  EXPECT_EQ(replica.Write(add, 0).error(), Error::kAlreadyExists);
  // A take sent again after its primary died does not take twice.
  DhtWrite take = W("n", "", DhtWrite::Mode::kTake);
  take.delta = 4;
  take.request = 1234;
  ASSERT_EQ(replica.Write(take, 0)->value, "11");
  ASSERT_EQ(replica.Write(take, 0)->value, "11");
  EXPECT_EQ(replica.Find("n", 0)->value, "11");
  // The record keeps the newest kDhtRecentWrites: the oldest is forgotten.
  for (uint64_t r = 2000; r < 2000 + kDhtRecentWrites; ++r) {
    DhtWrite set = W("n", std::to_string(r));
    set.request = r;
    ASSERT_TRUE(replica.Write(set, 0).ok());
  }
  EXPECT_EQ(replica.Held("n")->applied.size(), kDhtRecentWrites);
  auto forgotten = replica.Write(take, 0);  // its record is gone: applied anew
  ASSERT_TRUE(forgotten.ok());
  EXPECT_EQ(forgotten->value, std::to_string(2000 + kDhtRecentWrites - 1 - 4));
}

TEST(DhtWire, WriteRoundTrip) {
  DhtWrite w = W("key", std::string(3000, 'v'), DhtWrite::Mode::kCas, 77);
  w.flags = 0xdeadbeef;
  w.ttl_s = 9;
  auto bytes = dht_wire::EncodeWrite(w);
  auto back = dht_wire::DecodeWrite(bytes.data(), bytes.size());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->key, "key");
  EXPECT_EQ(back->value, w.value);
  EXPECT_EQ(back->mode, DhtWrite::Mode::kCas);
  EXPECT_EQ(back->cas, 77u);
  EXPECT_EQ(back->flags, 0xdeadbeefu);
  EXPECT_EQ(back->ttl_s, 9u);
  EXPECT_FALSE(back->check_cas);
  DhtWrite incr = W("n", "", DhtWrite::Mode::kIncr, 5);
  incr.check_cas = true;
  incr.create = true;
  incr.delta = 0xffffffffffull << 8;
  incr.initial = 42;
  incr.wait_ms = 1234;
  incr.request = (uint64_t(7) << 40) | 99;
  auto incr_bytes = dht_wire::EncodeWrite(incr);
  auto incr_back = dht_wire::DecodeWrite(incr_bytes.data(), incr_bytes.size());
  ASSERT_TRUE(incr_back.ok());
  EXPECT_EQ(incr_back->mode, DhtWrite::Mode::kIncr);
  EXPECT_TRUE(incr_back->check_cas);
  EXPECT_TRUE(incr_back->create);
  EXPECT_EQ(incr_back->delta, incr.delta);
  EXPECT_EQ(incr_back->initial, 42u);
  EXPECT_EQ(incr_back->wait_ms, 1234u);
  EXPECT_EQ(incr_back->request, incr.request);
  EXPECT_EQ(incr_back->cas, 5u);
}

TEST(DhtWire, ReplicateRoundTripCarriesTimeLeft) {
  DhtEntry e{.version = 12, .flags = 3, .expiry_ns = 15 * kSec, .value = "val"};
  auto bytes = dht_wire::EncodeReplicate("k", e, 10 * kSec);
  auto back = dht_wire::DecodeReplicate(bytes.data(), bytes.size(), 100 * kSec);  // another clock
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->key, "k");
  EXPECT_EQ(back->entry.version, 12u);
  EXPECT_EQ(back->entry.flags, 3u);
  EXPECT_EQ(back->entry.value, "val");
  EXPECT_EQ(back->entry.expiry_ns, 105 * kSec);
  DhtEntry tomb{.version = 13, .tombstone = true};
  bytes = dht_wire::EncodeReplicate("k", tomb, 0);
  auto tomb_back = dht_wire::DecodeReplicate(bytes.data(), bytes.size(), 0);
  ASSERT_TRUE(tomb_back.ok());
  EXPECT_TRUE(tomb_back->entry.tombstone);
  EXPECT_EQ(tomb_back->entry.expiry_ns, 0u);
}

TEST(DhtWire, ItemRoundTrip) {
  DhtEntry e{.version = 99, .flags = 5, .value = std::string(kDhtMaxValue, 'z')};
  auto bytes = dht_wire::EncodeItem(e);
  auto back = dht_wire::DecodeItem(bytes.data(), bytes.size());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->version, 99u);
  EXPECT_EQ(back->flags, 5u);
  EXPECT_EQ(back->value, e.value);
}

// Every truncation, and a sweep of corrupted bytes, is refused or decoded
// within bounds: never a read past the end (ASan in the sanitizer build).
TEST(DhtWire, MalformedInputRefused) {
  DhtWrite w = W("key", "value", DhtWrite::Mode::kAdd);
  auto write = dht_wire::EncodeWrite(w);
  constexpr size_t kHeader = 48, kKeyLength = 46;
  for (size_t n = 0; n < kHeader + 3; ++n) {
    EXPECT_FALSE(dht_wire::DecodeWrite(write.data(), n).ok()) << n;
  }
  auto bad_mode = write;
  bad_mode[0] = uint8_t(DhtWrite::kLastMode) + 1;
  EXPECT_EQ(dht_wire::DecodeWrite(bad_mode.data(), bad_mode.size()).error(), Error::kInvalidArgument);
  auto bad_options = write;
  bad_options[1] = 4;
  EXPECT_EQ(dht_wire::DecodeWrite(bad_options.data(), bad_options.size()).error(), Error::kInvalidArgument);
  auto zero_key = write;
  zero_key[kKeyLength] = 0;
  zero_key[kKeyLength + 1] = 0;
  EXPECT_FALSE(dht_wire::DecodeWrite(zero_key.data(), zero_key.size()).ok());
  auto long_key = write;
  long_key[kKeyLength] = 0xff;
  long_key[kKeyLength + 1] = 0xff;
  EXPECT_FALSE(dht_wire::DecodeWrite(long_key.data(), long_key.size()).ok());

  auto rep = dht_wire::EncodeReplicate("key", DhtEntry{.version = 1, .value = "v"}, 0);
  for (size_t n = 0; n < 24 + 3; ++n) EXPECT_FALSE(dht_wire::DecodeReplicate(rep.data(), n, 0).ok()) << n;
  DhtEntry recorded{.version = 3, .value = "5", .applied = {{7, 2, "4"}, {8, 3, "5"}}};
  auto with_record = dht_wire::EncodeReplicate("key", recorded, 0);
  for (size_t n = 0; n < with_record.size(); ++n) {  // cut inside the record: refused; after it: a shorter value
    auto cut = dht_wire::DecodeReplicate(with_record.data(), n, 0);
    EXPECT_EQ(cut.ok(), n >= with_record.size() - 1) << n;
  }
  auto too_many = with_record;
  too_many[21] = uint8_t(kDhtRecentWrites + 1);
  EXPECT_FALSE(dht_wire::DecodeReplicate(too_many.data(), too_many.size(), 0).ok());
  auto future_version = with_record;
  future_version[24 + 3 + 8] = 9;  // the first record's version above the state's
  EXPECT_FALSE(dht_wire::DecodeReplicate(future_version.data(), future_version.size(), 0).ok());
  auto long_answer = with_record;
  long_answer[24 + 3 + 16] = uint8_t(kDhtMaxRecordedAnswer + 1);
  EXPECT_FALSE(dht_wire::DecodeReplicate(long_answer.data(), long_answer.size(), 0).ok());
  auto zero_version = rep;
  std::fill(zero_version.begin(), zero_version.begin() + 8, 0);
  EXPECT_FALSE(dht_wire::DecodeReplicate(zero_version.data(), zero_version.size(), 0).ok());
  auto bad_tomb = rep;
  bad_tomb[8] = 2;
  EXPECT_FALSE(dht_wire::DecodeReplicate(bad_tomb.data(), bad_tomb.size(), 0).ok());
  auto tomb_with_value = rep;
  tomb_with_value[8] = 1;  // a tombstone never carries a value
  EXPECT_FALSE(dht_wire::DecodeReplicate(tomb_with_value.data(), tomb_with_value.size(), 0).ok());

  EXPECT_FALSE(dht_wire::DecodeItem(nullptr, 0).ok());
  EXPECT_FALSE(dht_wire::DecodeItem(rep.data(), 11).ok());
  EXPECT_FALSE(dht_wire::DecodeKey(nullptr, 0).ok());
  std::string long_key_bytes(kDhtMaxKey + 1, 'k');
  EXPECT_FALSE(
      dht_wire::DecodeKey(reinterpret_cast<const uint8_t*>(long_key_bytes.data()), long_key_bytes.size()).ok());

  std::mt19937 rng(1);
  for (int i = 0; i < 20000; ++i) {
    std::vector<uint8_t> junk(rng() % 64);
    for (auto& b : junk) b = uint8_t(rng());
    (void)dht_wire::DecodeWrite(junk.data(), junk.size());
    (void)dht_wire::DecodeReplicate(junk.data(), junk.size(), 0);
    (void)dht_wire::DecodeItem(junk.data(), junk.size());
  }
}

// Routing and failover as the Dht does them: the primary of a key in the
// ring without a dead node is the next owner, who was a replica before, so
// it holds every acknowledged write (r = 2).
TEST(DhtRouting, NewPrimaryWasAReplica) {
  auto ring = DhtRing::Create(RingConfig{}, {0, 1, 2});
  ASSERT_TRUE(ring.ok());
  auto without = ring->WithoutNode(2);
  ASSERT_TRUE(without.ok());
  auto again = ring->WithoutNode(2);  // every node computes the same ring
  ASSERT_TRUE(again.ok());
  int moved = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string key = "key" + std::to_string(i);
    uint64_t h = DhtKeyHash(key.data(), key.size());
    auto before = ring->OwnersOf(ring->PartitionOf(h));
    auto after = without->OwnersOf(without->PartitionOf(h));
    ASSERT_EQ(before.size(), 2u);
    ASSERT_EQ(after.size(), 2u);
    EXPECT_EQ(after[0], again->OwnersOf(again->PartitionOf(h))[0]);
    if (before[0] == 2) {
      ++moved;
      EXPECT_EQ(after[0], before[1]);
    } else {
      EXPECT_EQ(after[0], before[0]);
    }
  }
  EXPECT_GT(moved, 400);  // about a third of the keys
}

}  // namespace
}  // namespace fox::ebb
