// EbbRef: the hit path, the miss path, miss counters, null and unknown ids,
// ids beyond the direct table.
#include "fox/ebb/ebb_ref.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "ebb_test_util.h"
#include "fox/ebb/ebb.h"

namespace fox::ebb {
namespace {

std::atomic<int> g_faults{0};

class Cell : public SharedEbb<Cell> {
 public:
  explicit Cell(int value) : value_(value) {}
  int value() const { return value_; }
  // Counts fault-handler runs, then lets the flavour do the work.
  static Cell* HandleFault(EbbId id) {
    g_faults.fetch_add(1);
    return SharedEbb<Cell>::HandleFault(id);
  }

 private:
  int value_;
};

TEST(EbbRef, IsJustTheId) {
  static_assert(sizeof(EbbRef<Cell>) == sizeof(EbbId));
  constexpr EbbRef<Cell> ref(EbbId{1234});
  static_assert(ref.id() == EbbId{1234});
  static_assert(!EbbRef<Cell>());
  EXPECT_EQ(EbbRef<Cell>(EbbId{7}), EbbRef<Cell>(EbbId{7}));
}

TEST(EbbRef, FirstAccessMissesThenHits) {
  EbbRef<Cell> cell = Cell::Create(42);
  int faults = g_faults.load();
  uint64_t misses = GetCoreStats(0).rep_misses;
  EXPECT_EQ(cell.LocalRepOrNull(), nullptr);

  EXPECT_EQ(cell->value(), 42);
  EXPECT_EQ(g_faults.load(), faults + 1);
  EXPECT_EQ(GetCoreStats(0).rep_misses, misses + 1);
  Cell* rep = cell.LocalRepOrNull();
  ASSERT_NE(rep, nullptr);

  for (int i = 0; i < 1000; ++i) EXPECT_EQ(cell.Get(), rep);
  EXPECT_EQ(g_faults.load(), faults + 1);
  EXPECT_EQ(GetCoreStats(0).rep_misses, misses + 1);
  Destroy(cell);
  QuiescentPoint();
}

TEST(EbbRef, MissCountersAreExactPerCoreAndInTotal) {
  constexpr int kEbbs = 50;
  const int kCores = std::min(4, testing::WorkerCores());
  std::vector<EbbRef<Cell>> cells;
  for (int i = 0; i < kEbbs; ++i) cells.push_back(Cell::Create(i));
  std::vector<uint64_t> before(kCores + 1);
  for (int c = 1; c <= kCores; ++c) before[c] = GetCoreStats(c).rep_misses;
  uint64_t total_before = GetStats().rep_misses;

  testing::RunOnCores(1, kCores, [&](int) {
    for (int round = 0; round < 5; ++round) {
      for (int i = 0; i < kEbbs; ++i) EXPECT_EQ(cells[i]->value(), i);
    }
  });

  for (int c = 1; c <= kCores; ++c) EXPECT_EQ(GetCoreStats(c).rep_misses, before[c] + kEbbs);
  EXPECT_EQ(GetStats().rep_misses, total_before + kCores * kEbbs);
  for (auto& cell : cells) Destroy(cell);
  QuiescentPoint();
}

TEST(EbbRef, NullRefThrowsDeadEbbError) {
  EbbRef<Cell> null;
  uint64_t dead = GetStats().dead_faults;
  EXPECT_THROW(null->value(), DeadEbbError);
  try {
    null->value();
  } catch (const DeadEbbError& e) {
    EXPECT_EQ(e.id(), kNullId);
  }
  EXPECT_EQ(GetStats().dead_faults, dead + 2);
  EXPECT_EQ(null.LocalRepOrNull(), nullptr);
}

TEST(EbbRef, UnknownIdsThrowDeadEbbError) {
  EXPECT_THROW(EbbRef<Cell>(AllocateId())->value(), DeadEbbError);        // never created
  EXPECT_THROW(EbbRef<Cell>(EbbId{0xFFFFFFFFu})->value(), DeadEbbError);  // reserved
  // Cell is not default-constructible, so a static id is not created lazily.
  EXPECT_THROW(EbbRef<Cell>(testing::FreshStaticId("test.ref.unknown"))->value(), DeadEbbError);
}

// Hands out ids far above the direct table.
class FarSource : public IdRangeSource {
 public:
  Result<IdRange> AcquireRange(uint32_t count) override {
    IdRange r{next_, count};
    next_ = next_ + count;
    return r;
  }

 private:
  EbbId next_{5'000'000};
};

TEST(EbbRef, FarIdsUseTheFarMapWithoutCountingMisses) {
  FarSource source;
  IdAllocator allocator(&source, 16);
  EbbId id = *allocator.Allocate();
  ASSERT_GE(Raw(id), kDirectSlots);
  EbbRef<Cell> cell = Cell::CreateAt(id, 7);

  uint64_t misses = GetCoreStats(0).rep_misses;
  uint64_t far = GetCoreStats(0).far_lookups;
  EXPECT_EQ(cell->value(), 7);
  EXPECT_EQ(GetCoreStats(0).rep_misses, misses + 1);
  Cell* rep = cell.Get();
  for (int i = 0; i < 10; ++i) EXPECT_EQ(cell.Get(), rep);
  EXPECT_EQ(GetCoreStats(0).rep_misses, misses + 1);
  EXPECT_EQ(GetCoreStats(0).far_lookups, far + 11);
  EXPECT_EQ(cell.LocalRepOrNull(), nullptr);  // interrupt-safe path: direct table only

  // A far id must not be confused with the direct id it aliases modulo 2^16.
  EXPECT_THROW(EbbRef<Cell>(EbbId{Raw(id) % kDirectSlots})->value(), DeadEbbError);

  Destroy(cell);
  EXPECT_THROW(cell->value(), DeadEbbError);
  QuiescentPoint();
}

TEST(EbbRef, EmptyTableIsNeverWritten) {
  EbbRef<Cell> cell = Cell::Create(1);
  EXPECT_EQ(cell->value(), 1);
  Destroy(cell);
  QuiescentPoint();
  const LocalTable* empty = EmptyTable();
  for (uint32_t i = 0; i < kDirectSlots; ++i) {
    ASSERT_EQ(empty->slots[i].load(), nullptr) << "slot " << i;
  }
  EXPECT_NE(ThisCoreTable(), empty);  // core 0 has missed, so it has its own
}

}  // namespace
}  // namespace fox::ebb
