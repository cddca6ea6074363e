// Host tests for the buddy page allocator (kernel/common/mem/page_allocator.cc).
//
// The allocator manages real memory from mmap, aligned by over-mapping so
// block alignment is meaningful. It must never touch that memory itself
// (NeverTouchesTheSpan), nor rely on the metadata storage being zeroed: the
// fixture hands it garbage.
#include "fox/mem/page_allocator.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

namespace fox::mem {
namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kGiB = size_t{1} << 30;

// An anonymous mapping of `size` bytes starting at a multiple of `align`.
class AlignedRegion {
 public:
  AlignedRegion(size_t size, size_t align, int prot = PROT_READ | PROT_WRITE) : raw_size_(size + align) {
    raw_ = mmap(nullptr, raw_size_, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw_ == MAP_FAILED) raw_ = nullptr;
    base_ = (reinterpret_cast<uintptr_t>(raw_) + align - 1) & ~(align - 1);
  }
  ~AlignedRegion() {
    if (raw_ != nullptr) munmap(raw_, raw_size_);
  }
  bool ok() const { return raw_ != nullptr; }
  uintptr_t base() const { return base_; }

 private:
  void* raw_ = nullptr;
  size_t raw_size_;
  uintptr_t base_ = 0;
};

uintptr_t Addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

class PageAllocatorTest : public ::testing::Test {
 protected:
  static constexpr size_t kSpan = 256 * kMiB;  // 65536 pages, one order-16 block
  static constexpr size_t kPages = kSpan / kPageSize;

  void SetUp() override {
    ASSERT_TRUE(region_.ok());
    meta_.assign(PageAllocator::MetaBytes(base(), kSpan), 0xA5);
    ASSERT_TRUE(pages_.Init(base(), kSpan, meta_.data()).ok());
  }
  uintptr_t base() const { return region_.base(); }
  void AddAll() { ASSERT_TRUE(pages_.AddFree(base(), kSpan).ok()); }

  // Allocates order-`order` blocks until kNoMemory.
  std::vector<void*> Exhaust(int order) {
    std::vector<void*> blocks;
    for (;;) {
      Result<void*> r = pages_.Alloc(order);
      if (!r.ok()) {
        EXPECT_EQ(r.error(), Error::kNoMemory);
        break;
      }
      blocks.push_back(r.value());
    }
    return blocks;
  }

  AlignedRegion region_{kSpan, kGiB};
  std::vector<uint8_t> meta_;
  PageAllocator pages_;
};

// Ten bytes per page (state, tag, two links) and a bit per 512 pages, plus
// a few bytes of alignment slack (the metadata's start, and the links of a
// last chunk of an odd number of pages).
TEST(PageAllocatorStatic, MetaBytesIsTenPerPage) {
  EXPECT_GE(PageAllocator::MetaBytes(0, 256 * kMiB), 10 * 65536u + 128 / 8);
  EXPECT_LE(PageAllocator::MetaBytes(0, 256 * kMiB), 10 * 65536u + 128 / 8 + 8);
  EXPECT_GE(PageAllocator::MetaBytes(kGiB, kPageSize), 10u);
  EXPECT_LE(PageAllocator::MetaBytes(kGiB, kPageSize), 10u + 8 + 8 + 6);
  EXPECT_LE(PageAllocator::MetaBytes(kGiB, 515 * kPageSize), 10u * 515 + 8 + 8 + 2);
}

TEST(PageAllocatorStatic, OrderForBytes) {
  EXPECT_EQ(PageAllocator::OrderForBytes(0), 0);
  EXPECT_EQ(PageAllocator::OrderForBytes(1), 0);
  EXPECT_EQ(PageAllocator::OrderForBytes(4096), 0);
  EXPECT_EQ(PageAllocator::OrderForBytes(4097), 1);
  EXPECT_EQ(PageAllocator::OrderForBytes(8192), 1);
  EXPECT_EQ(PageAllocator::OrderForBytes(8193), 2);
  EXPECT_EQ(PageAllocator::OrderForBytes(kMiB), 8);
  EXPECT_EQ(PageAllocator::OrderForBytes(kGiB), kMaxOrder);
  EXPECT_EQ(PageAllocator::OrderForBytes(kGiB + 1), -1);
  EXPECT_EQ(PageAllocator::OrderForBytes(~size_t{0}), -1);
}

TEST(PageAllocatorStatic, InitRejectsBadArguments) {
  std::vector<uint8_t> meta(64);
  PageAllocator a;
  EXPECT_EQ(a.Init(0x100000, 0, meta.data()).error(), Error::kInvalidArgument);
  EXPECT_EQ(a.Init(0x100001, 4 * kPageSize, meta.data()).error(), Error::kInvalidArgument);
  EXPECT_EQ(a.Init(0x100000, 4 * kPageSize + 1, meta.data()).error(), Error::kInvalidArgument);
  EXPECT_EQ(a.Init(0x100000, 4 * kPageSize, nullptr).error(), Error::kInvalidArgument);
  EXPECT_EQ(a.Init(~uintptr_t{0} & ~(kPageSize - 1), 4 * kPageSize, meta.data()).error(),
            Error::kInvalidArgument);  // wraps
  EXPECT_TRUE(a.Init(0x100000, 4 * kPageSize, meta.data()).ok());
  EXPECT_EQ(a.Init(0x100000, 4 * kPageSize, meta.data()).error(), Error::kInvalidArgument);
}

// The allocator never reads or writes the span: with the span PROT_NONE,
// any access would fault. Also exercises order-18 (1 GiB) blocks, which never
// merge further, and splits down to single pages.
TEST(PageAllocatorStatic, NeverTouchesTheSpan) {
  constexpr size_t kSpan = 2 * kGiB;
  AlignedRegion region(kSpan, kGiB, PROT_NONE);
  ASSERT_TRUE(region.ok());
  std::vector<uint8_t> meta(PageAllocator::MetaBytes(region.base(), kSpan), 0x5A);
  PageAllocator a;
  ASSERT_TRUE(a.Init(region.base(), kSpan, meta.data()).ok());
  EXPECT_EQ(a.GetStats().span_pages, kSpan / kPageSize);
  EXPECT_EQ(a.GetStats().free_pages, 0u);
  ASSERT_TRUE(a.AddFree(region.base(), kSpan).ok());
  {
    std::vector<void*> small;
    for (int order : {0, 3, 0, 9, 12, 0}) {
      Result<void*> r = a.Alloc(order);
      ASSERT_TRUE(r.ok());
      EXPECT_EQ(a.Tag(r.value()), 0);
      small.push_back(r.value());
    }
    for (void* p : small) ASSERT_TRUE(a.Free(p).ok());
  }
  PageAllocator::Stats s = a.GetStats();
  EXPECT_EQ(s.free_blocks[kMaxOrder], 2u);
  EXPECT_EQ(s.largest_free_order, kMaxOrder);
  Result<void*> b1 = a.Alloc(kMaxOrder);
  Result<void*> b2 = a.Alloc(kMaxOrder);
  ASSERT_TRUE(b1.ok());
  ASSERT_TRUE(b2.ok());
  EXPECT_EQ(Addr(b1.value()) % kGiB, 0u);
  EXPECT_EQ(Addr(b2.value()) % kGiB, 0u);
  EXPECT_EQ(a.Alloc(0).error(), Error::kNoMemory);
  EXPECT_EQ(a.Alloc(kMaxOrder + 1).error(), Error::kInvalidArgument);
  EXPECT_EQ(a.Alloc(-1).error(), Error::kInvalidArgument);
  ASSERT_TRUE(a.Free(b1.value()).ok());
  ASSERT_TRUE(a.Free(b2.value()).ok());
  s = a.GetStats();
  EXPECT_EQ(s.free_blocks[kMaxOrder], 2u);
  EXPECT_EQ(s.free_pages, kSpan / kPageSize);
}

TEST_F(PageAllocatorTest, StartsReserved) {
  PageAllocator::Stats s = pages_.GetStats();
  EXPECT_EQ(s.span_pages, kPages);
  EXPECT_EQ(s.total_pages, 0u);
  EXPECT_EQ(s.free_pages, 0u);
  EXPECT_EQ(s.largest_free_order, -1);
  EXPECT_EQ(pages_.Alloc(0).error(), Error::kNoMemory);
  EXPECT_EQ(pages_.GetStats().failed_allocs, 1u);
  EXPECT_TRUE(pages_.Contains(reinterpret_cast<void*>(base())));
  EXPECT_TRUE(pages_.Contains(reinterpret_cast<void*>(base() + kSpan - 1)));
  EXPECT_FALSE(pages_.Contains(reinterpret_cast<void*>(base() + kSpan)));
  EXPECT_FALSE(pages_.Contains(reinterpret_cast<void*>(base() - 1)));
}

TEST_F(PageAllocatorTest, AddFreeCoalescesIntoLargestBlocks) {
  AddAll();
  PageAllocator::Stats s = pages_.GetStats();
  EXPECT_EQ(s.total_pages, kPages);
  EXPECT_EQ(s.free_pages, kPages);
  EXPECT_EQ(s.free_blocks[16], 1u);
  EXPECT_EQ(s.largest_free_order, 16);
  for (int k = 0; k < 16; k++) EXPECT_EQ(s.free_blocks[k], 0u) << k;
}

// Of two free blocks of one order, the lower is handed out first: a node
// that uses little memory touches only the bottom of it.
TEST_F(PageAllocatorTest, LowBlocksFirst) {
  // Pages [3, kPages - 2): blocks of orders 0, 2, ... at the bottom and of
  // orders 1, 2, ... at the top.
  ASSERT_TRUE(pages_.AddFree(base() + 3 * kPageSize, kSpan - 5 * kPageSize).ok());
  EXPECT_EQ(Addr(pages_.Alloc(0).value()), base() + 3 * kPageSize);
  EXPECT_EQ(Addr(pages_.Alloc(2).value()), base() + 4 * kPageSize);
  EXPECT_EQ(Addr(pages_.Alloc(3).value()), base() + 8 * kPageSize);
  EXPECT_EQ(Addr(pages_.Alloc(1).value()), base() + kSpan - 4 * kPageSize);  // the only order-1 block
}

TEST_F(PageAllocatorTest, PiecewiseAddFreeMergesWithNeighbours) {
  // Odd-sized pieces in a scrambled order must still end up as one block.
  std::vector<std::pair<size_t, size_t>> pieces;  // (first page, pages)
  size_t page = 0;
  std::mt19937 rng(7);
  while (page < kPages) {
    size_t n = std::min<size_t>(1 + rng() % 300, kPages - page);
    pieces.push_back({page, n});
    page += n;
  }
  std::shuffle(pieces.begin(), pieces.end(), rng);
  for (auto [first, n] : pieces) {
    ASSERT_TRUE(pages_.AddFree(base() + first * kPageSize, n * kPageSize).ok());
  }
  PageAllocator::Stats s = pages_.GetStats();
  EXPECT_EQ(s.free_pages, kPages);
  EXPECT_EQ(s.free_blocks[16], 1u);
  EXPECT_EQ(s.largest_free_order, 16);
}

TEST_F(PageAllocatorTest, EveryBlockIsNaturallyAligned) {
  AddAll();
  std::mt19937 rng(1);
  std::vector<void*> live;
  for (int i = 0; i < 4000; i++) {
    int order = static_cast<int>(rng() % 11);
    Result<void*> r = pages_.Alloc(order);
    if (!r.ok()) continue;
    EXPECT_EQ(Addr(r.value()) % (kPageSize << order), 0u) << "order " << order;
    EXPECT_EQ(pages_.OrderOf(r.value()).value_or(-1), order);
    live.push_back(r.value());
    if (rng() % 3 == 0) {
      size_t victim = rng() % live.size();
      ASSERT_TRUE(pages_.Free(live[victim]).ok());
      live[victim] = live.back();
      live.pop_back();
    }
  }
  for (void* p : live) ASSERT_TRUE(pages_.Free(p).ok());
  EXPECT_EQ(pages_.GetStats().free_blocks[16], 1u);
}

TEST_F(PageAllocatorTest, ExhaustThenFreeEverythingCoalesces) {
  AddAll();
  std::vector<void*> blocks = Exhaust(0);
  EXPECT_EQ(blocks.size(), kPages);
  PageAllocator::Stats s = pages_.GetStats();
  EXPECT_EQ(s.free_pages, 0u);
  EXPECT_EQ(s.largest_free_order, -1);
  EXPECT_EQ(s.allocs, kPages);
  EXPECT_EQ(s.failed_allocs, 1u);
  std::sort(blocks.begin(), blocks.end());
  EXPECT_EQ(std::adjacent_find(blocks.begin(), blocks.end()), blocks.end());  // distinct
  EXPECT_EQ(Addr(blocks.front()), base());
  EXPECT_EQ(Addr(blocks.back()), base() + kSpan - kPageSize);

  std::shuffle(blocks.begin(), blocks.end(), std::mt19937(3));
  for (void* p : blocks) ASSERT_TRUE(pages_.Free(p).ok());
  s = pages_.GetStats();
  EXPECT_EQ(s.free_pages, kPages);
  EXPECT_EQ(s.frees, kPages);
  EXPECT_EQ(s.free_blocks[16], 1u);
  for (int k = 0; k < 16; k++) EXPECT_EQ(s.free_blocks[k], 0u) << k;

  // Mixed orders, freed in a different order, coalesce the same way.
  std::vector<void*> mixed;
  for (int order : {5, 0, 3, 7, 1}) {
    std::vector<void*> more = Exhaust(order);
    mixed.insert(mixed.end(), more.begin(), more.end());
  }
  EXPECT_EQ(pages_.GetStats().free_pages, 0u);
  std::shuffle(mixed.begin(), mixed.end(), std::mt19937(4));
  for (void* p : mixed) ASSERT_TRUE(pages_.Free(p).ok());
  EXPECT_EQ(pages_.GetStats().free_blocks[16], 1u);
}

TEST_F(PageAllocatorTest, HolesAreNeverHandedOut) {
  // Added ranges (in pages), with holes between them, including odd edges.
  const std::vector<std::pair<size_t, size_t>> ranges = {{0, 256},     {257, 3},  {1000, 1},
                                                         {1003, 5000}, {9000, 7}, {40001, 20000}};
  size_t added = 0;
  for (auto [first, n] : ranges) {
    ASSERT_TRUE(pages_.AddFree(base() + first * kPageSize, n * kPageSize).ok());
    added += n;
  }
  auto in_ranges = [&](uintptr_t addr, size_t bytes) {
    size_t first = (addr - base()) / kPageSize;
    size_t last = first + bytes / kPageSize;  // exclusive
    for (auto [r0, n] : ranges) {
      if (first >= r0 && last <= r0 + n) return true;
    }
    return false;
  };
  EXPECT_EQ(pages_.GetStats().total_pages, added);
  // Large orders first so holes would break merged blocks, then fill up.
  std::vector<void*> all;
  for (int order = 12; order >= 0; order--) {
    for (void* p : Exhaust(order)) {
      EXPECT_TRUE(in_ranges(Addr(p), kPageSize << order)) << "order " << order;
      all.push_back(p);
    }
  }
  EXPECT_EQ(pages_.GetStats().free_pages, 0u);
  size_t pages_out = 0;
  for (void* p : all) pages_out += size_t{1} << pages_.OrderOf(p).value_or(63);
  EXPECT_EQ(pages_out, added);
  for (void* p : all) ASSERT_TRUE(pages_.Free(p).ok());
  EXPECT_EQ(pages_.GetStats().free_pages, added);
}

TEST_F(PageAllocatorTest, AddFreeRejectsBadRanges) {
  ASSERT_TRUE(pages_.AddFree(base() + 16 * kPageSize, 16 * kPageSize).ok());
  Result<void*> held = pages_.Alloc(2);
  ASSERT_TRUE(held.ok());
  PageAllocator::Stats before = pages_.GetStats();
  auto bad = [&](uintptr_t start, size_t size) {
    EXPECT_EQ(pages_.AddFree(start, size).error(), Error::kInvalidArgument)
        << std::hex << start - base() << " +" << size;
  };
  bad(base() - kPageSize, 2 * kPageSize);                        // starts before the span
  bad(base() + kSpan - kPageSize, 2 * kPageSize);                // ends after the span
  bad(base() + kSpan, kPageSize);                                // entirely after
  bad(base() + 8 * kPageSize, 9 * kPageSize);                    // overlaps free pages
  bad(base() + 20 * kPageSize, kPageSize);                       // inside free pages
  bad(Addr(held.value()), 4 * kPageSize);                        // allocated pages
  bad(Addr(held.value()) + kPageSize, kPageSize);                // inside allocated pages
  bad(base() + 100 * kPageSize + 1, kPageSize);                  // misaligned start
  bad(base() + 100 * kPageSize, kPageSize + 1);                  // misaligned size
  bad(base() + 100 * kPageSize, 0);                              // empty
  bad(base() + 100 * kPageSize, ~size_t{0} & ~(kPageSize - 1));  // wraps
  PageAllocator::Stats after = pages_.GetStats();
  EXPECT_EQ(after.free_pages, before.free_pages);
  EXPECT_EQ(after.total_pages, before.total_pages);
  // Nothing was half-added: the rest of the span is still reserved.
  EXPECT_TRUE(pages_.AddFree(base(), 16 * kPageSize).ok());
  EXPECT_TRUE(pages_.AddFree(base() + 32 * kPageSize, kSpan - 32 * kPageSize).ok());
  ASSERT_TRUE(pages_.Free(held.value()).ok());
  EXPECT_EQ(pages_.GetStats().free_blocks[16], 1u);
}

TEST_F(PageAllocatorTest, BadFreesAreRejectedWithoutDamage) {
  AddAll();
  Result<void*> block = pages_.Alloc(3);
  Result<void*> other = pages_.Alloc(0);
  ASSERT_TRUE(block.ok());
  ASSERT_TRUE(other.ok());
  char* p = static_cast<char*>(block.value());
  PageAllocator::Stats before = pages_.GetStats();
  EXPECT_EQ(pages_.Free(p + kPageSize).error(), Error::kInvalidArgument);  // interior page
  EXPECT_EQ(pages_.Free(p + 8).error(), Error::kInvalidArgument);          // unaligned
  EXPECT_EQ(pages_.Free(reinterpret_cast<void*>(base() + kSpan)).error(),
            Error::kInvalidArgument);  // out of span
  EXPECT_EQ(pages_.Free(nullptr).error(), Error::kInvalidArgument);
  int on_stack = 0;
  EXPECT_EQ(pages_.Free(&on_stack).error(), Error::kInvalidArgument);
  PageAllocator::Stats after = pages_.GetStats();
  EXPECT_EQ(after.free_pages, before.free_pages);
  EXPECT_EQ(after.frees, before.frees);

  ASSERT_TRUE(pages_.Free(p).ok());
  EXPECT_EQ(pages_.Free(p).error(), Error::kInvalidArgument);  // double free
  EXPECT_EQ(pages_.OrderOf(p).error(), Error::kInvalidArgument);
  // A free block's head after merging into a bigger free block.
  EXPECT_EQ(pages_.Free(p + 4 * kPageSize).error(), Error::kInvalidArgument);
  after = pages_.GetStats();
  EXPECT_EQ(after.free_pages, before.free_pages + 8);
  EXPECT_EQ(after.frees, before.frees + 1);

  // The allocator still hands out every page exactly once.
  ASSERT_TRUE(pages_.Free(other.value()).ok());
  std::vector<void*> all = Exhaust(0);
  EXPECT_EQ(all.size(), kPages);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
  for (void* q : all) ASSERT_TRUE(pages_.Free(q).ok());
  EXPECT_EQ(pages_.GetStats().free_blocks[16], 1u);
}

TEST_F(PageAllocatorTest, OrderOfAndTags) {
  AddAll();
  Result<void*> block = pages_.Alloc(4);
  ASSERT_TRUE(block.ok());
  char* p = static_cast<char*>(block.value());
  EXPECT_EQ(pages_.OrderOf(p).value_or(-1), 4);
  EXPECT_EQ(pages_.OrderOf(p + kPageSize).error(), Error::kInvalidArgument);
  EXPECT_EQ(pages_.OrderOf(p + 1).error(), Error::kInvalidArgument);
  EXPECT_EQ(pages_.OrderOf(p + 16 * kPageSize).error(), Error::kInvalidArgument);  // free

  EXPECT_EQ(pages_.Tag(p), 0);
  for (int i = 0; i < 16; i++) pages_.SetTag(p + i * kPageSize, static_cast<uint8_t>(0x40 + i));
  for (int i = 0; i < 16; i++) EXPECT_EQ(pages_.Tag(p + i * kPageSize + 123), 0x40 + i);
  EXPECT_EQ(pages_.Tag(p + 16 * kPageSize), 0);
  pages_.SetTag(reinterpret_cast<void*>(base() + kSpan), 9);  // outside: ignored
  EXPECT_EQ(pages_.Tag(reinterpret_cast<void*>(base() + kSpan)), 0);
  ASSERT_TRUE(pages_.Free(p).ok());
  for (int i = 0; i < 16; i++) EXPECT_EQ(pages_.Tag(p + i * kPageSize), 0) << i;

  // A block over several lazily set-up metadata chunks (512 pages each):
  // every page's tag works, and reads 0 again after the block is freed.
  Result<void*> big = pages_.Alloc(11);
  ASSERT_TRUE(big.ok());
  char* q = static_cast<char*>(big.value());
  for (int i = 0; i < 2048; i += 511) EXPECT_EQ(pages_.Tag(q + i * kPageSize), 0) << i;
  for (int i = 0; i < 2048; i += 511) pages_.SetTag(q + i * kPageSize, static_cast<uint8_t>(1 + i % 200));
  for (int i = 0; i < 2048; i += 511) EXPECT_EQ(pages_.Tag(q + i * kPageSize), 1 + i % 200) << i;
  ASSERT_TRUE(pages_.Free(q).ok());
  for (int i = 0; i < 2048; i += 511) EXPECT_EQ(pages_.Tag(q + i * kPageSize), 0) << i;
}

TEST_F(PageAllocatorTest, UnalignedSpanStillGivesNaturallyAlignedBlocks) {
  // A span starting 3 pages past a 1 GiB boundary and of an odd length.
  constexpr size_t kOffset = 3 * kPageSize;
  constexpr size_t kSize = 5000 * kPageSize;
  std::vector<uint8_t> meta(PageAllocator::MetaBytes(base() + kOffset, kSize));
  PageAllocator a;
  ASSERT_TRUE(a.Init(base() + kOffset, kSize, meta.data()).ok());
  ASSERT_TRUE(a.AddFree(base() + kOffset, kSize).ok());
  size_t pages_out = 0;
  for (int order = 12; order >= 0; order--) {
    for (;;) {
      Result<void*> r = a.Alloc(order);
      if (!r.ok()) break;
      uintptr_t addr = Addr(r.value());
      EXPECT_EQ(addr % (kPageSize << order), 0u);
      EXPECT_GE(addr, base() + kOffset);
      EXPECT_LE(addr + (kPageSize << order), base() + kOffset + kSize);
      pages_out += size_t{1} << order;
    }
  }
  EXPECT_EQ(pages_out, 5000u);
}

// A span whose last chunk is partial and odd (its record is shorter, its
// links aligned): every page of it can be taken, tagged and given back.
TEST_F(PageAllocatorTest, PartialLastChunkWorksLikeTheOthers) {
  constexpr size_t kPagesHere = 2 * 512 + 3;
  std::vector<uint8_t> meta(PageAllocator::MetaBytes(base(), kPagesHere * kPageSize));
  PageAllocator a;
  ASSERT_TRUE(a.Init(base(), kPagesHere * kPageSize, meta.data()).ok());
  ASSERT_TRUE(a.AddFree(base(), kPagesHere * kPageSize).ok());
  std::vector<void*> taken;
  for (;;) {
    Result<void*> r = a.Alloc(0);
    if (!r.ok()) break;
    taken.push_back(r.value());
  }
  ASSERT_EQ(taken.size(), kPagesHere);
  for (size_t i = 0; i < taken.size(); i++) a.SetTag(taken[i], static_cast<uint8_t>(1 + i % 250));
  for (size_t i = 0; i < taken.size(); i++) {
    ASSERT_EQ(a.Tag(taken[i]), 1 + i % 250) << i;
    ASSERT_EQ(a.OrderOf(taken[i]).value_or(-1), 0) << i;
  }
  for (void* p : taken) ASSERT_TRUE(a.Free(p).ok());
  PageAllocator::Stats s = a.GetStats();
  EXPECT_EQ(s.free_pages, kPagesHere);
  EXPECT_EQ(s.free_blocks[10], 1u);  // the two whole chunks merged again
  EXPECT_EQ(s.free_blocks[1], 1u);   // and the last three pages: 2 + 1
  EXPECT_EQ(s.free_blocks[0], 1u);
  EXPECT_EQ(a.Tag(taken.back()), 0);
}

TEST_F(PageAllocatorTest, RandomStressContentsNeverOverlap) {
  AddAll();
  struct Live {
    uint64_t* p;
    int order;
    uint64_t key;
  };
  std::vector<Live> live;
  std::mt19937_64 rng(42);
  uint64_t next_key = 1;
  size_t pages_live = 0;
  // Stamps the first and last word of every page with the block's key.
  auto stamp = [](const Live& l) {
    size_t words_per_page = kPageSize / sizeof(uint64_t);
    for (size_t page = 0; page < (size_t{1} << l.order); page++) {
      l.p[page * words_per_page] = l.key;
      l.p[page * words_per_page + words_per_page - 1] = ~l.key;
    }
  };
  auto check = [](const Live& l) {
    size_t words_per_page = kPageSize / sizeof(uint64_t);
    for (size_t page = 0; page < (size_t{1} << l.order); page++) {
      if (l.p[page * words_per_page] != l.key || l.p[page * words_per_page + words_per_page - 1] != ~l.key) {
        return false;
      }
    }
    return true;
  };
  uint64_t failed = 0;
  for (int i = 0; i < 200000; i++) {
    bool do_alloc = live.empty() || rng() % 100 < 52;
    if (do_alloc) {
      int order = static_cast<int>(rng() % 100 < 90 ? rng() % 4 : rng() % 11);
      Result<void*> r = pages_.Alloc(order);
      if (!r.ok()) {
        failed++;
        continue;
      }
      Live l{static_cast<uint64_t*>(r.value()), order, next_key++};
      ASSERT_EQ(Addr(l.p) % (kPageSize << order), 0u);
      stamp(l);
      live.push_back(l);
      pages_live += size_t{1} << order;
    } else {
      size_t victim = rng() % live.size();
      ASSERT_TRUE(check(live[victim])) << "block overwritten";
      ASSERT_TRUE(pages_.Free(live[victim].p).ok());
      pages_live -= size_t{1} << live[victim].order;
      live[victim] = live.back();
      live.pop_back();
    }
  }
  PageAllocator::Stats s = pages_.GetStats();
  EXPECT_EQ(s.free_pages, kPages - pages_live);
  EXPECT_EQ(s.failed_allocs, failed);
  EXPECT_EQ(s.allocs - s.frees, live.size());
  for (const Live& l : live) {
    ASSERT_TRUE(check(l));
    ASSERT_TRUE(pages_.Free(l.p).ok());
  }
  s = pages_.GetStats();
  EXPECT_EQ(s.free_pages, kPages);
  EXPECT_EQ(s.allocs, s.frees);
  EXPECT_EQ(s.free_blocks[16], 1u);
}

}  // namespace
}  // namespace fox::mem
