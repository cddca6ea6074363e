// Static ids and dynamic id allocation.
#include "fox/ebb/ebb_id.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "ebb_test_util.h"
#include "fox/ebb/id_allocator.h"
#include "fox/ebb/static_ids.h"

namespace fox::ebb {
namespace {

// Static ids are a wire contract: pinned values catch an accidental change
// of the hash or of the static range.
static_assert(StaticId("fox.GlobalIdMap") == StaticId(std::string_view("fox.GlobalIdMap")));
static_assert(IsStaticId(kGlobalIdMapId) && IsStaticId(kDhtId));

TEST(StaticId, IsDeterministicAndPinned) {
  EXPECT_EQ(StaticId("fox.GlobalIdMap"), kGlobalIdMapId);
  std::string built = std::string("fox.") + "GlobalIdMap";
  EXPECT_EQ(StaticId(built), kGlobalIdMapId);
  EXPECT_EQ(Raw(kGlobalIdMapId), 4243u);
  EXPECT_EQ(Raw(StaticId("fox.Messenger")), 2498u);
  EXPECT_EQ(Raw(StaticId("")), 1u + NameHash("") % kStaticIdCount);
}

TEST(StaticId, StaysInTheStaticRange) {
  for (int i = 0; i < 100000; ++i) {
    EbbId id = StaticId("name" + std::to_string(i));
    ASSERT_TRUE(IsStaticId(id)) << Raw(id);
    ASSERT_FALSE(IsDynamicId(id));
  }
}

TEST(StaticId, DistinctnessCheckFindsCollisions) {
  EXPECT_TRUE(StaticIdsDistinct({"fox.GlobalIdMap", "fox.Messenger", "fox.Dht"}));
  EXPECT_FALSE(StaticIdsDistinct({"fox.Dht", "fox.Messenger", "fox.Dht"}));
  // Find two different names that collide and check the checker sees them.
  std::vector<std::string> names;
  std::vector<int> owner(Raw(kFirstDynamicId), -1);
  std::string a, b;
  for (int i = 0; a.empty(); ++i) {
    names.push_back("app.Ebb" + std::to_string(i));
    EbbId id = StaticId(names.back());
    if (owner[Raw(id)] >= 0) {
      a = names[owner[Raw(id)]];
      b = names.back();
    }
    owner[Raw(id)] = i;
  }
  EXPECT_NE(a, b);
  EXPECT_FALSE(StaticIdsDistinct({"x", a, "y", b}));
  EXPECT_TRUE(StaticIdsDistinct({"x", a, "y"}));
}

TEST(StaticId, SystemNamesAreDistinct) {
  std::set<EbbId> ids = {kGlobalIdMapId,     kMessengerId,    kNodeAllocatorId, kFileSystemId,     kDhtId,
                         kFailureDetectorId, kApgasRuntimeId, kPlaceManagerId,  kResilientFinishId};
  EXPECT_EQ(ids.size(), 9u);
}

TEST(StaticId, FreshTestIdsNeverRepeat) {
  std::set<EbbId> ids;
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(ids.insert(testing::FreshStaticId("t")).second);
}

TEST(LocalIdRangeSource, HandsOutConsecutiveDisjointRanges) {
  LocalIdRangeSource source(kFirstDynamicId, kFirstDynamicId + 99);
  Result<IdRange> a = source.AcquireRange(40);
  Result<IdRange> b = source.AcquireRange(40);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->first, kFirstDynamicId);
  EXPECT_EQ(a->count, 40u);
  EXPECT_EQ(b->first, kFirstDynamicId + 40);
  EXPECT_EQ(source.AcquireRange(0).error(), Error::kInvalidArgument);
  EXPECT_EQ(source.AcquireRange(21).error(), Error::kOutOfRange);
  Result<IdRange> c = source.AcquireRange(20);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->first + c->count - 1, kFirstDynamicId + 99);
  EXPECT_EQ(source.AcquireRange(1).error(), Error::kOutOfRange);
}

TEST(LocalIdRangeSource, ReachesTheLastDynamicId) {
  LocalIdRangeSource source(kLastDynamicId - 9);
  Result<IdRange> r = source.AcquireRange(10);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->first + (r->count - 1), kLastDynamicId);
  EXPECT_EQ(source.AcquireRange(1).error(), Error::kOutOfRange);
}

TEST(IdAllocator, IdsAreUniqueAcrossAllocatorsRangesAndCores) {
  LocalIdRangeSource source;
  IdAllocator first(&source, 7);  // small ranges: many refills, many races
  IdAllocator second(&source, 13);
  const int kCores = std::min(8, testing::WorkerCores());
  constexpr int kPerCore = 2000;
  std::mutex mu;
  std::vector<EbbId> all;
  testing::RunOnCores(1, kCores, [&](int core) {
    std::vector<EbbId> mine;
    IdAllocator& allocator = core % 2 ? first : second;
    for (int i = 0; i < kPerCore; ++i) {
      Result<EbbId> id = allocator.Allocate();
      ASSERT_TRUE(id.ok());
      ASSERT_TRUE(IsDynamicId(*id));
      mine.push_back(*id);
    }
    std::lock_guard<std::mutex> lock(mu);
    all.insert(all.end(), mine.begin(), mine.end());
  });
  ASSERT_EQ(all.size(), size_t(kCores * kPerCore));
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "an id was handed out twice";
  EXPECT_EQ(first.allocated() + second.allocated(), uint64_t(kCores * kPerCore));
}

TEST(IdAllocator, ExhaustionIsAnError) {
  LocalIdRangeSource source(kFirstDynamicId, kFirstDynamicId + 9);
  IdAllocator allocator(&source, 5);
  for (int i = 0; i < 10; ++i) {
    Result<EbbId> id = allocator.Allocate();
    ASSERT_TRUE(id.ok());
    EXPECT_EQ(*id, kFirstDynamicId + i);
  }
  EXPECT_EQ(allocator.Allocate().error(), Error::kOutOfRange);
}

class BadSource : public IdRangeSource {
 public:
  Result<IdRange> AcquireRange(uint32_t count) override { return IdRange{EbbId{5}, count}; }
};

TEST(IdAllocator, ARangeOfNonDynamicIdsIsRejected) {
  BadSource bad;
  IdAllocator allocator(&bad);
  EXPECT_EQ(allocator.Allocate().error(), Error::kCorrupt);
}

TEST(IdAllocator, SetSourceDropsTheCurrentRange) {
  LocalIdRangeSource local(kFirstDynamicId, kFirstDynamicId + 999);
  LocalIdRangeSource global(EbbId{1u << 20});
  IdAllocator allocator(&local, 100);
  EXPECT_EQ(*allocator.Allocate(), kFirstDynamicId);
  allocator.SetSource(&global);
  EXPECT_EQ(*allocator.Allocate(), EbbId{1u << 20});
  EXPECT_EQ(allocator.abandoned(), 99u);
}

TEST(AllocateId, HandsOutFreshDynamicIds) {
  std::set<EbbId> ids;
  for (int i = 0; i < 1000; ++i) {
    EbbId id = AllocateId();
    EXPECT_TRUE(IsDynamicId(id));
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 1000u);
}

}  // namespace
}  // namespace fox::ebb
