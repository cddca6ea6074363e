// RecordRing (net/include/fox/net/record_ring.h): order, wrap-around with
// skips, out-of-order completion, exact room accounting, and one producer
// against one consumer on two threads.
#include "fox/net/record_ring.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <deque>
#include <random>
#include <thread>
#include <vector>

namespace fox::net {
namespace {

bool Put(RecordRing& ring, uint16_t tag, const std::vector<uint8_t>& data) {
  uint8_t* p = ring.Reserve(data.size(), tag);
  if (p == nullptr) return false;
  if (!data.empty()) std::memcpy(p, data.data(), data.size());
  ring.Commit();
  return true;
}

TEST(RecordRingTest, KeepsOrderAcrossManyWrapsWithEveryLength) {
  RecordRing ring;
  ASSERT_TRUE(ring.Init(1000).ok());
  std::mt19937 rng(1);
  std::deque<std::vector<uint8_t>> expected;
  uint64_t produced = 0, consumed = 0;
  for (int step = 0; step < 20000; ++step) {
    if (rng() % 2 == 0) {
      std::vector<uint8_t> data(rng() % 200);
      for (auto& b : data) b = uint8_t(rng());
      size_t room = ring.Room();
      bool ok = Put(ring, uint16_t(produced), data);
      // Room() >= WorstCase(n) guarantees success; below Footprint(n), failure.
      if (room >= RecordRing::WorstCase(data.size())) EXPECT_TRUE(ok);
      if (room < RecordRing::Footprint(data.size())) EXPECT_FALSE(ok);
      if (ok) {
        expected.push_back(data);
        ++produced;
      }
    } else {
      RecordRing::Record r;
      bool got = ring.Front(&r);
      ASSERT_EQ(got, !expected.empty());
      if (!got) continue;
      EXPECT_EQ(r.tag, uint16_t(consumed));
      ASSERT_EQ(r.length, expected.front().size());
      if (r.length != 0) EXPECT_EQ(0, std::memcmp(r.payload, expected.front().data(), r.length));
      ring.Pop(r);
      expected.pop_front();
      ++consumed;
    }
  }
  EXPECT_GT(consumed, 5000u);
  while (!expected.empty()) {
    RecordRing::Record r;
    ASSERT_TRUE(ring.Front(&r));
    ring.Pop(r);
    expected.pop_front();
  }
  RecordRing::Record r;
  EXPECT_FALSE(ring.Front(&r));
  EXPECT_TRUE(ring.Empty());
  EXPECT_EQ(ring.Room(), ring.capacity());
}

TEST(RecordRingTest, DoneRecordsAreReleasedOnlyFromTheTail) {
  RecordRing ring;
  ASSERT_TRUE(ring.Init(256).ok());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Put(ring, uint16_t(i), std::vector<uint8_t>(8, uint8_t(i))));
  size_t room = ring.Room();
  // Mark the second and third done: nothing is freed while the first waits.
  std::vector<RecordRing::Record> records;
  RecordRing::Record r;
  for (uint64_t pos = ring.tail(); ring.At(pos, &r); pos = r.next) records.push_back(r);
  ASSERT_EQ(records.size(), 4u);
  ring.MarkDone(records[1]);
  ring.MarkDone(records[2]);
  ring.Release();
  EXPECT_EQ(ring.Room(), room);
  ASSERT_TRUE(ring.Front(&r));
  EXPECT_EQ(r.tag, 0);
  // The first done: the tail moves over the three, and Front skips to the fourth.
  ring.MarkDone(records[0]);
  ring.Release();
  EXPECT_EQ(ring.Room(), room + 3 * RecordRing::Footprint(8));
  ASSERT_TRUE(ring.Front(&r));
  EXPECT_EQ(r.tag, 3);
}

TEST(RecordRingTest, RefusesWhatDoesNotFitAndKeepsWhatItHas) {
  RecordRing ring;
  ASSERT_TRUE(ring.Init(64).ok());
  EXPECT_EQ(ring.Reserve(57, 1), nullptr);  // 8 + 64 > 64
  ASSERT_TRUE(Put(ring, 7, std::vector<uint8_t>(40, 7)));
  EXPECT_EQ(ring.Reserve(16, 2), nullptr);  // 48 used, 24 needed
  RecordRing::Record r;
  ASSERT_TRUE(ring.Front(&r));
  EXPECT_EQ(r.tag, 7);
  EXPECT_EQ(r.length, 40u);
}

TEST(RecordRingTest, OneProducerAndOneConsumerOnTwoThreads) {
  RecordRing ring;
  ASSERT_TRUE(ring.Init(4096).ok());
  constexpr uint64_t kRecords = 200000;
  std::thread producer([&] {
    for (uint64_t i = 0; i < kRecords;) {
      size_t len = 8 + i % 61;
      uint8_t* p = ring.Reserve(len, uint16_t(i));
      if (p == nullptr) {
        std::this_thread::yield();
        continue;
      }
      for (size_t k = 0; k < len; ++k) p[k] = uint8_t(i + k);
      ring.Commit();
      ++i;
    }
  });
  uint64_t bad = 0;
  for (uint64_t i = 0; i < kRecords;) {
    RecordRing::Record r;
    if (!ring.Front(&r)) {
      std::this_thread::yield();
      continue;
    }
    bad += r.tag != uint16_t(i) || r.length != 8 + i % 61;
    for (size_t k = 0; k < r.length; ++k) bad += r.payload[k] != uint8_t(i + k);
    ring.Pop(r);
    ++i;
  }
  producer.join();
  EXPECT_EQ(bad, 0u);
  EXPECT_TRUE(ring.Empty());
}

}  // namespace
}  // namespace fox::net
