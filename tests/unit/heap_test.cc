// Host tests for the kernel heap (kernel/common/mem/heap.cc) over a real
// page allocator backed by mmap. The "core" of a test thread is a
// thread_local index, so several threads act as several cores.
#include "fox/mem/heap.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fox/mem/page_allocator.h"

namespace fox::mem {
namespace {

constexpr size_t kKiB = 1024;
constexpr size_t kMiB = kKiB * kKiB;
constexpr size_t kGiB = kMiB * kKiB;

thread_local int t_core = 0;
int CurrentCore() { return t_core; }

// Handler events, recorded per test (handlers are plain function pointers).
std::mutex g_events_mu;
std::vector<std::pair<std::string, const void*>> g_errors;
std::vector<std::pair<size_t, size_t>> g_ooms;

void RecordError(const char* what, const void* p) {
  std::lock_guard<std::mutex> lock(g_events_mu);
  g_errors.push_back({what, p});
}
void RecordOom(size_t size, size_t align) {
  std::lock_guard<std::mutex> lock(g_events_mu);
  g_ooms.push_back({size, align});
}

class AlignedRegion {
 public:
  AlignedRegion(size_t size, size_t align) : raw_size_(size + align) {
    raw_ = mmap(nullptr, raw_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
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

// Fills [p, p + size) with a pattern derived from `key`; Check verifies it.
void Fill(void* p, size_t size, uint64_t key) {
  auto* b = static_cast<uint8_t*>(p);
  for (size_t i = 0; i < size; i++) b[i] = static_cast<uint8_t>(key * 131 + i * 7 + (i >> 8));
}
bool Check(const void* p, size_t size, uint64_t key) {
  auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < size; i++) {
    if (b[i] != static_cast<uint8_t>(key * 131 + i * 7 + (i >> 8))) return false;
  }
  return true;
}
// Cheaper stamp for stress tests: the first and last up to 32 bytes.
void Stamp(void* p, size_t size, uint64_t key) {
  size_t head = std::min<size_t>(size, 32);
  Fill(p, head, key);
  if (size > 32)
    Fill(static_cast<char*>(p) + size - std::min<size_t>(size - 32, 32), std::min<size_t>(size - 32, 32), ~key);
}
bool CheckStamp(const void* p, size_t size, uint64_t key) {
  size_t head = std::min<size_t>(size, 32);
  if (!Check(p, head, key)) return false;
  if (size > 32)
    return Check(static_cast<const char*>(p) + size - std::min<size_t>(size - 32, 32), std::min<size_t>(size - 32, 32),
                 ~key);
  return true;
}

class HeapTest : public ::testing::Test {
 protected:
  static constexpr size_t kSpan = 256 * kMiB;
  static constexpr int kCores = 4;

  void SetUp() override {
    t_core = 0;
    {
      std::lock_guard<std::mutex> lock(g_events_mu);
      g_errors.clear();
      g_ooms.clear();
    }
    SetUpPages(kSpan);
  }

  void SetUpPages(size_t span) {
    ASSERT_TRUE(region_.ok());
    meta_.assign(PageAllocator::MetaBytes(region_.base(), span), 0);
    ASSERT_TRUE(pages_.Init(region_.base(), span, meta_.data()).ok());
    ASSERT_TRUE(pages_.AddFree(region_.base(), span).ok());
    ASSERT_TRUE(heap_.Init(&pages_, CurrentCore, kCores).ok());
    heap_.SetErrorHandler(RecordError);
    heap_.SetOomHandler(RecordOom);
    baseline_free_pages_ = pages_.GetStats().free_pages;
    baseline_reserved_ = heap_.GetStats().bytes_reserved;
  }

  size_t ErrorCount() {
    std::lock_guard<std::mutex> lock(g_events_mu);
    return g_errors.size();
  }
  std::string LastError() {
    std::lock_guard<std::mutex> lock(g_events_mu);
    return g_errors.empty() ? "" : g_errors.back().first;
  }

  // After everything is freed: flushes core `core`'s cache, checks the
  // counters agree and that Trim gives every page back.
  void ExpectAllReturned() {
    Heap::Stats s = heap_.GetStats();
    EXPECT_EQ(s.allocs, s.frees);
    EXPECT_EQ(s.bytes_in_use, 0u);
    EXPECT_EQ(s.bytes_cached, 0u);
    EXPECT_EQ(s.bytes_large, 0u);
    EXPECT_EQ(s.slabs, s.empty_slabs);  // nothing in use, only the reserve
    EXPECT_LE(s.empty_slabs, static_cast<size_t>(Heap::kNumClasses));
    EXPECT_EQ(s.large_allocs, s.large_frees);
    heap_.Trim();
    s = heap_.GetStats();
    EXPECT_EQ(s.slabs, 0u);
    EXPECT_EQ(s.slabs_created, s.slabs_released);
    EXPECT_EQ(s.bytes_reserved, baseline_reserved_);
    EXPECT_EQ(pages_.GetStats().free_pages, baseline_free_pages_);
  }

  AlignedRegion region_{kSpan, kGiB};
  std::vector<uint8_t> meta_;
  PageAllocator pages_;
  Heap heap_;
  size_t baseline_free_pages_ = 0;
  size_t baseline_reserved_ = 0;
};

TEST(HeapStatic, InitRejectsBadArguments) {
  AlignedRegion region(16 * kMiB, 16 * kMiB);
  ASSERT_TRUE(region.ok());
  std::vector<uint8_t> meta(PageAllocator::MetaBytes(region.base(), 16 * kMiB));
  PageAllocator pages;
  ASSERT_TRUE(pages.Init(region.base(), 16 * kMiB, meta.data()).ok());
  Heap heap;
  EXPECT_EQ(heap.Init(&pages, CurrentCore, 4).error(), Error::kNoMemory);  // no free pages yet
  ASSERT_TRUE(pages.AddFree(region.base(), 16 * kMiB).ok());
  EXPECT_EQ(heap.Init(nullptr, CurrentCore, 4).error(), Error::kInvalidArgument);
  EXPECT_EQ(heap.Init(&pages, nullptr, 4).error(), Error::kInvalidArgument);
  EXPECT_EQ(heap.Init(&pages, CurrentCore, 0).error(), Error::kInvalidArgument);
  EXPECT_EQ(heap.Init(&pages, CurrentCore, Heap::kMaxCores + 1).error(), Error::kInvalidArgument);
  EXPECT_TRUE(heap.Init(&pages, CurrentCore, Heap::kMaxCores).ok());
  EXPECT_EQ(heap.Init(&pages, CurrentCore, 4).error(), Error::kInvalidArgument);
}

TEST(HeapStatic, SizeClassesBoundWaste) {
  size_t previous = 0;
  int classes = 0;
  for (size_t size = 1; size <= Heap::kMaxSmallSize; size++) {
    size_t rounded = Heap::RoundUpSize(size);
    ASSERT_GE(rounded, size);
    ASSERT_EQ(rounded % 16, 0u);
    ASSERT_GE(rounded, previous);
    if (size <= 128) {
      ASSERT_LT(rounded - size, 16u) << size;
    } else {
      ASSERT_LE((rounded - size) * 4, rounded) << size;  // <= 25% waste
    }
    if (rounded != previous) classes++;
    previous = rounded;
  }
  EXPECT_EQ(classes, Heap::kNumClasses);
  EXPECT_EQ(Heap::RoundUpSize(0), 16u);
  EXPECT_EQ(Heap::RoundUpSize(Heap::kMaxSmallSize), Heap::kMaxSmallSize);
  EXPECT_EQ(Heap::RoundUpSize(Heap::kMaxSmallSize + 1), 64 * kKiB);
  EXPECT_EQ(Heap::RoundUpSize(3 * kMiB), 4 * kMiB);
  EXPECT_EQ(Heap::RoundUpSize(2 * kGiB), 0u);
}

TEST_F(HeapTest, EverySizeAndAlignment) {
  std::vector<size_t> sizes = {0,
                               1,
                               2,
                               8,
                               15,
                               16,
                               17,
                               31,
                               32,
                               33,
                               100,
                               3 * kMiB + 5,
                               5 * kMiB,
                               Heap::kMaxSmallSize - 1,
                               Heap::kMaxSmallSize,
                               Heap::kMaxSmallSize + 1,
                               40000,
                               65536,
                               65537};
  for (size_t size = 16; size <= Heap::kMaxSmallSize; size = Heap::RoundUpSize(size + 1)) {
    sizes.push_back(size - 1);  // class boundaries
    sizes.push_back(size);
    sizes.push_back(size + 1);
  }
  struct Live {
    void* p;
    size_t size;
    uint64_t key;
  };
  std::vector<Live> live;
  uint64_t key = 1;
  for (size_t align = 1; align <= kMiB; align *= 2) {
    for (size_t size : sizes) {
      void* p = heap_.Alloc(size, align);
      ASSERT_NE(p, nullptr) << size << " align " << align;
      EXPECT_EQ(Addr(p) % std::max(align, Heap::kMinAlign), 0u) << size << " align " << align;
      size_t usable = heap_.UsableSize(p);
      EXPECT_GE(usable, std::max<size_t>(size, 1));
      if (align <= Heap::kMinAlign) EXPECT_EQ(usable, Heap::RoundUpSize(size));
      if (usable > 64 * kKiB || align > Heap::kMaxSmallSize) {  // keep the footprint small
        memset(p, 0x5a, usable);                                // the whole usable size belongs to the caller
        Stamp(p, usable, key);
        ASSERT_TRUE(CheckStamp(p, usable, key));
        heap_.Free(p);
        continue;
      }
      Fill(p, usable, key);
      live.push_back({p, usable, key++});
    }
  }
  std::sort(live.begin(), live.end(), [](const Live& a, const Live& b) { return a.p < b.p; });
  for (size_t i = 0; i + 1 < live.size(); i++) {
    ASSERT_LE(Addr(live[i].p) + live[i].size, Addr(live[i + 1].p)) << "overlap";
  }
  for (const Live& l : live) {
    ASSERT_TRUE(Check(l.p, l.size, l.key)) << l.size;
    heap_.Free(l.p);
  }
  EXPECT_EQ(ErrorCount(), 0u);
  heap_.FlushCoreCache();
  ExpectAllReturned();
}

TEST_F(HeapTest, SizeZeroGivesUniquePointers) {
  std::vector<void*> ps;
  for (int i = 0; i < 1000; i++) {
    void* p = heap_.Alloc(0);
    ASSERT_NE(p, nullptr);
    ps.push_back(p);
  }
  std::sort(ps.begin(), ps.end());
  EXPECT_EQ(std::adjacent_find(ps.begin(), ps.end()), ps.end());
  for (void* p : ps) heap_.Free(p);
  heap_.Free(nullptr);
  EXPECT_EQ(ErrorCount(), 0u);
}

TEST_F(HeapTest, BadAlignmentReturnsNullWithoutOom) {
  EXPECT_EQ(heap_.Alloc(64, 0), nullptr);
  EXPECT_EQ(heap_.Alloc(64, 3), nullptr);
  EXPECT_EQ(heap_.Alloc(64, 48), nullptr);
  EXPECT_EQ(heap_.GetStats().failed_allocs, 3u);
  EXPECT_TRUE(g_ooms.empty());
  EXPECT_EQ(heap_.Alloc(64, 2 * kGiB), nullptr);  // larger than any block: out of memory
  ASSERT_EQ(g_ooms.size(), 1u);
  EXPECT_EQ(g_ooms[0], std::make_pair(size_t{64}, 2 * kGiB));
}

// A new slab is not written beyond what it hands out (objects are carved as
// they are taken), so that a node touches memory, and under an emulator
// faults in host pages, as it uses it. The region is fresh anonymous memory:
// mincore says which of its pages were ever touched.
TEST_F(HeapTest, NewSlabTouchesOnlyWhatItHandsOut) {
  constexpr size_t kSlab = 64 * kKiB;  // the smallest slab (kMinSlabOrder)
  void* p = heap_.Alloc(16);
  ASSERT_NE(p, nullptr);
  uintptr_t base = Addr(p) & ~(kSlab - 1);
  unsigned char resident[kSlab / 4096];
  ASSERT_EQ(mincore(reinterpret_cast<void*>(base), kSlab, resident), 0);
  size_t touched = 0;
  for (unsigned char r : resident) touched += r & 1;
  // The first page (the batch the core's cache took) and the last (the slab's header).
  EXPECT_LE(touched, 2u);
  // Then two slabs' worth, all distinct, and back.
  std::vector<void*> ps = {p};
  while (ps.size() < 2 * kSlab / 16) ps.push_back(heap_.Alloc(16));
  std::vector<void*> sorted = ps;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());  // all distinct
  for (void* q : ps) heap_.Free(q);
  EXPECT_EQ(ErrorCount(), 0u);
  heap_.FlushCoreCache();
  ExpectAllReturned();
}

TEST_F(HeapTest, CacheHitsAndMissesAreCounted) {
  std::vector<void*> ps;
  for (int i = 0; i < 1000; i++) ps.push_back(heap_.Alloc(64));
  Heap::CoreStats core = heap_.GetCoreStats(0);
  EXPECT_EQ(core.allocs, 1000u);
  EXPECT_GT(core.cache_misses, 0u);
  EXPECT_LT(core.cache_misses, 100u);  // batches, not one lock per object
  EXPECT_EQ(core.cache_hits + core.cache_misses, 1000u);
  EXPECT_EQ(core.bytes_in_use_delta, 64000);
  for (void* p : ps) heap_.Free(p);
  core = heap_.GetCoreStats(0);
  EXPECT_EQ(core.frees, 1000u);
  EXPECT_EQ(core.bytes_in_use_delta, 0);
  EXPECT_GT(core.cache_flushes, 0u);
  EXPECT_GT(core.bytes_cached, 0u);
  EXPECT_EQ(heap_.GetCoreStats(1).allocs, 0u);
  EXPECT_EQ(heap_.GetCoreStats(99).allocs, 0u);
  heap_.FlushCoreCache();
  EXPECT_EQ(heap_.GetCoreStats(0).bytes_cached, 0u);
  ExpectAllReturned();
}

TEST_F(HeapTest, RandomStressVerifiesContents) {
  struct Live {
    void* p = nullptr;
    size_t size = 0;
    uint64_t key = 0;
  };
  std::vector<Live> slots(8192);
  std::mt19937_64 rng(12345);
  uint64_t key = 1;
  auto random_size = [&]() -> size_t {
    uint64_t r = rng() % 1000;
    if (r < 700) return rng() % 257;
    if (r < 950) return rng() % 4097;
    if (r < 999) return rng() % (Heap::kMaxSmallSize + 1);
    return rng() % (2 * kMiB);
  };
  auto random_align = [&]() -> size_t {
    uint64_t r = rng() % 100;
    if (r < 90) return Heap::kMinAlign;
    if (r < 98) return 64;
    return 4096;
  };
  constexpr int kOps = 2'000'000;
  for (int i = 0; i < kOps; i++) {
    Live& slot = slots[rng() % slots.size()];
    if (slot.p != nullptr) {
      ASSERT_TRUE(CheckStamp(slot.p, slot.size, slot.key)) << "op " << i;
      heap_.Free(slot.p);
      slot.p = nullptr;
    } else {
      size_t size = random_size();
      size_t align = random_align();
      void* p = heap_.Alloc(size, align);
      ASSERT_NE(p, nullptr);
      ASSERT_EQ(Addr(p) % align, 0u);
      slot = {p, size, key++};
      Stamp(p, size, slot.key);
    }
    if (i % 500'000 == 0) {  // no two live objects overlap
      std::vector<Live> sorted;
      for (const Live& l : slots) {
        if (l.p != nullptr) sorted.push_back(l);
      }
      std::sort(sorted.begin(), sorted.end(), [](const Live& a, const Live& b) { return a.p < b.p; });
      for (size_t j = 0; j + 1 < sorted.size(); j++) {
        ASSERT_LE(Addr(sorted[j].p) + std::max<size_t>(sorted[j].size, 1), Addr(sorted[j + 1].p));
      }
    }
  }
  Heap::Stats mid = heap_.GetStats();
  EXPECT_GT(mid.cache_hits, mid.cache_misses * 4);
  EXPECT_GT(mid.large_allocs, 0u);
  for (Live& slot : slots) {
    if (slot.p == nullptr) continue;
    ASSERT_TRUE(CheckStamp(slot.p, slot.size, slot.key));
    heap_.Free(slot.p);
  }
  EXPECT_EQ(ErrorCount(), 0u);
  EXPECT_EQ(heap_.GetStats().failed_allocs, 0u);
  heap_.FlushCoreCache();
  ExpectAllReturned();
}

TEST_F(HeapTest, ReallocPreservesContents) {
  char* p = static_cast<char*>(heap_.Realloc(nullptr, 10));  // acts as Alloc
  ASSERT_NE(p, nullptr);
  Fill(p, 10, 5);
  size_t have = 10;
  for (size_t size : {size_t{100}, size_t{1000}, size_t{40000}, 3 * kMiB, size_t{33000}, size_t{50}, size_t{20}}) {
    char* q = static_cast<char*>(heap_.Realloc(p, size));
    ASSERT_NE(q, nullptr) << size;
    size_t kept = std::min(have, size);
    ASSERT_TRUE(Check(q, kept, 5)) << "realloc to " << size;
    ASSERT_GE(heap_.UsableSize(q), size);
    Fill(q, size, 5);
    p = q;
    have = size;
  }
  // Growing within the usable size and small shrinks stay in place.
  EXPECT_EQ(heap_.Realloc(p, heap_.UsableSize(p)), p);
  EXPECT_EQ(heap_.Realloc(p, 17), p);
  // A large block shrunk a lot moves to a small class.
  void* big = heap_.Alloc(kMiB);
  Fill(big, 100, 9);
  void* small = heap_.Realloc(big, 100);
  ASSERT_NE(small, nullptr);
  EXPECT_NE(small, big);
  EXPECT_EQ(heap_.UsableSize(small), 112u);
  EXPECT_TRUE(Check(small, 100, 9));
  // Size 0 keeps a valid, unique object.
  void* zero = heap_.Realloc(small, 0);
  ASSERT_NE(zero, nullptr);
  heap_.Free(zero);
  heap_.Free(p);
  EXPECT_EQ(ErrorCount(), 0u);
  // A pointer the heap does not own: reported, nullptr.
  int on_stack = 0;
  EXPECT_EQ(heap_.Realloc(&on_stack, 64), nullptr);
  EXPECT_EQ(ErrorCount(), 1u);
  heap_.FlushCoreCache();
  ExpectAllReturned();
}

TEST_F(HeapTest, OutOfMemoryReturnsNullAndCallsHandler) {
  // A fresh heap over a 4 MiB span.
  AlignedRegion region(4 * kMiB, 4 * kMiB);
  ASSERT_TRUE(region.ok());
  std::vector<uint8_t> meta(PageAllocator::MetaBytes(region.base(), 4 * kMiB));
  PageAllocator pages;
  ASSERT_TRUE(pages.Init(region.base(), 4 * kMiB, meta.data()).ok());
  ASSERT_TRUE(pages.AddFree(region.base(), 4 * kMiB).ok());
  Heap heap;
  ASSERT_TRUE(heap.Init(&pages, CurrentCore, 2).ok());
  heap.SetOomHandler(RecordOom);
  size_t free_after_init = pages.GetStats().free_pages;

  EXPECT_EQ(heap.Alloc(8 * kMiB), nullptr);
  ASSERT_EQ(g_ooms.size(), 1u);
  EXPECT_EQ(g_ooms[0], std::make_pair(8 * kMiB, Heap::kMinAlign));
  EXPECT_EQ(heap.Realloc(nullptr, 5 * kMiB), nullptr);
  ASSERT_EQ(g_ooms.size(), 2u);
  EXPECT_EQ(g_ooms[1].first, 5 * kMiB);

  std::vector<void*> ps;
  for (;;) {
    void* p = heap.Alloc(1000);
    if (p == nullptr) break;
    memset(p, 0xab, 1000);
    ps.push_back(p);
  }
  ASSERT_EQ(g_ooms.size(), 3u);
  EXPECT_EQ(g_ooms[2], std::make_pair(size_t{1000}, Heap::kMinAlign));
  EXPECT_GT(ps.size(), 3000u);  // most of 4 MiB went to 1 KiB objects
  EXPECT_EQ(heap.GetStats().failed_allocs, 3u);
  // Realloc failure leaves the object alone.
  EXPECT_EQ(heap.Realloc(ps[0], 64 * kKiB), nullptr);
  EXPECT_EQ(static_cast<uint8_t*>(ps[0])[999], 0xab);
  EXPECT_EQ(heap.UsableSize(ps[0]), 1024u);

  for (void* p : ps) heap.Free(p);
  heap.FlushCoreCache();
  EXPECT_EQ(heap.GetStats().empty_slabs, 1u);
  EXPECT_EQ(heap.GetStats().bytes_in_use, 0u);
  // Every 64 KiB block comes back, including the reserve slab's, which the
  // heap trims before giving up. The per-core array took one page of the
  // first block, which leaves 63.
  std::vector<void*> blocks;
  for (;;) {
    void* b = heap.Alloc(64 * kKiB);
    if (b == nullptr) break;
    blocks.push_back(b);
  }
  EXPECT_EQ(blocks.size(), 63u);
  EXPECT_EQ(heap.GetStats().empty_slabs, 0u);
  for (void* b : blocks) heap.Free(b);
  EXPECT_EQ(pages.GetStats().free_pages, free_after_init);
}

TEST_F(HeapTest, FreedMemoryReturnsToPageAllocator) {
  std::mt19937_64 rng(99);
  std::vector<void*> ps;
  for (int i = 0; i < 60000; i++) {
    size_t size = rng() % 200 == 0 ? rng() % (256 * kKiB) : rng() % 2048;
    void* p = heap_.Alloc(size);
    ASSERT_NE(p, nullptr);
    ps.push_back(p);
  }
  Heap::Stats full = heap_.GetStats();
  EXPECT_GT(full.bytes_reserved, 60000 * kKiB);
  EXPECT_GE(full.bytes_reserved, full.bytes_in_use);
  EXPECT_EQ(pages_.GetStats().free_pages * kPageSize,
            baseline_free_pages_ * kPageSize - (full.bytes_reserved - baseline_reserved_));
  std::shuffle(ps.begin(), ps.end(), rng);
  for (void* p : ps) heap_.Free(p);
  heap_.FlushCoreCache();
  // Without Trim: only the per-class reserve (one empty slab each) is kept.
  Heap::Stats after = heap_.GetStats();
  EXPECT_LE(after.empty_slabs, static_cast<size_t>(Heap::kNumClasses));
  EXPECT_EQ(after.slabs, after.empty_slabs);
  size_t kept = (baseline_free_pages_ - pages_.GetStats().free_pages) * kPageSize;
  EXPECT_EQ(kept, after.bytes_reserved - baseline_reserved_);
  EXPECT_LE(kept, 4 * kMiB);
  ExpectAllReturned();
}

TEST_F(HeapTest, InvalidFreesAreReportedAndHarmless) {
  char* a = static_cast<char*>(heap_.Alloc(64));
  char* b = static_cast<char*>(heap_.Alloc(64));
  char* big = static_cast<char*>(heap_.Alloc(100 * kKiB));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_NE(big, nullptr);
  Fill(a, 64, 1);
  Fill(b, 64, 2);
  Fill(big, 100 * kKiB, 3);
  Heap::Stats before = heap_.GetStats();

  struct Case {
    const void* p;
    const char* expect;  // substring of the report
  };
  int on_stack = 0;
  Result<void*> raw_pages = pages_.Alloc(0);  // pages the heap never saw
  ASSERT_TRUE(raw_pages.ok());
  const std::vector<Case> cases = {
      {&on_stack, "not allocated"},
      {reinterpret_cast<void*>(region_.base() + kSpan + 4096), "not allocated"},
      {a + 16, "interior"},
      {a + 1, "interior"},
      {big + 8, "interior"},
      {big + 4096, "not allocated"},
      {raw_pages.value(), "not allocated"},
  };
  size_t errors = 0;
  for (const Case& c : cases) {
    heap_.Free(const_cast<void*>(c.p));
    ASSERT_EQ(ErrorCount(), ++errors) << c.expect;
    EXPECT_NE(LastError().find(c.expect), std::string::npos) << LastError();
    EXPECT_EQ(heap_.UsableSize(c.p), 0u);
    ASSERT_EQ(ErrorCount(), ++errors);
  }
  // Double frees of a small and a large object.
  heap_.Free(a);
  heap_.Free(a);
  EXPECT_EQ(ErrorCount(), ++errors);
  EXPECT_EQ(LastError(), "double free");
  heap_.Free(big);
  heap_.Free(big);
  EXPECT_EQ(ErrorCount(), ++errors);
  EXPECT_EQ(heap_.GetStats().errors, errors);

  // Nothing was corrupted: b is intact, counters moved only for the two
  // real frees, and the next allocations are distinct and usable.
  Heap::Stats after = heap_.GetStats();
  EXPECT_EQ(after.frees, before.frees + 2);
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use - 64 - 128 * kKiB);
  EXPECT_TRUE(Check(b, 64, 2));
  char* c = static_cast<char*>(heap_.Alloc(64));
  char* d = static_cast<char*>(heap_.Alloc(64));
  EXPECT_EQ(c, a);  // a was cached once, not twice
  EXPECT_NE(d, a);
  EXPECT_NE(d, b);
  heap_.Free(b);
  heap_.Free(c);
  heap_.Free(d);
  ASSERT_TRUE(pages_.Free(raw_pages.value()).ok());
  EXPECT_EQ(ErrorCount(), errors);
  heap_.FlushCoreCache();
  ExpectAllReturned();
}

// Free and UsableSize tell an object's start from a pointer into it by the
// offset in its slab (a multiplication by the class's inverse, not a
// division): every object of a full slab of every class is its own start,
// and every byte after the start (checked: the next one, the middle, the
// last) is interior.
TEST_F(HeapTest, ObjectStartsInEveryClass) {
  size_t errors = 0;
  for (size_t size = 16; size <= Heap::kMaxSmallSize; size = Heap::RoundUpSize(size + 1)) {
    std::vector<char*> objects;
    size_t n = std::min<size_t>(std::max<size_t>(2 * kMiB / size, 16), 4096);  // beyond one slab
    for (size_t i = 0; i < n; i++) {
      auto* p = static_cast<char*>(heap_.Alloc(size));
      ASSERT_NE(p, nullptr) << size;
      ASSERT_EQ(heap_.UsableSize(p), size) << size << " object " << i;
      objects.push_back(p);
    }
    for (size_t i = 0; i < n; i += std::max<size_t>(n / 64, 1)) {
      for (size_t inside : {size_t{1}, size / 2, size - 1}) {
        EXPECT_EQ(heap_.UsableSize(objects[i] + inside), 0u) << size << " + " << inside;
        ASSERT_EQ(ErrorCount(), ++errors);
        EXPECT_NE(LastError().find("interior"), std::string::npos) << LastError();
      }
    }
    for (char* p : objects) heap_.Free(p);
    ASSERT_EQ(ErrorCount(), errors) << size;
  }
  heap_.FlushCoreCache();
  ExpectAllReturned();
}

// A bad link on a slab's own free list (objects given back from a cache):
// the rest of that list is dropped, and the slab still hands out its fresh
// objects. (With them skipped after a bad link, FetchBatch took from the
// same listed slab forever, under the class lock.)
TEST_F(HeapTest, BadSlabListStillHandsOutFreshObjects) {
  std::vector<char*> ps;
  for (int i = 0; i < 10; i++) ps.push_back(static_cast<char*>(heap_.Alloc(48)));
  for (char* p : ps) heap_.Free(p);
  heap_.FlushCoreCache();                  // back on their slab's free list
  for (char* p : ps) memset(p, 0x41, 16);  // every link clobbered
  char* p = static_cast<char*>(heap_.Alloc(48));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(ErrorCount(), 1u);
  EXPECT_NE(LastError().find("overwritten"), std::string::npos);
  EXPECT_EQ(std::find(ps.begin(), ps.end(), p), ps.end());  // a fresh one
}

TEST_F(HeapTest, WriteAfterFreeIsDetectedNotFollowed) {
  std::vector<char*> ps;
  for (int i = 0; i < 10; i++) ps.push_back(static_cast<char*>(heap_.Alloc(48)));
  for (char* p : ps) heap_.Free(p);
  memset(ps.back(), 0x41, 16);  // clobber the free-list link of the cache head
  char* p = static_cast<char*>(heap_.Alloc(48));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(ErrorCount(), 1u);
  EXPECT_NE(LastError().find("overwritten"), std::string::npos);
  EXPECT_EQ(std::find(ps.begin(), ps.end(), p), ps.end());  // not from the bad list
  Fill(p, 48, 3);
  EXPECT_TRUE(Check(p, 48, 3));
  heap_.Free(p);
}

TEST_F(HeapTest, ForeignHeapPointerIsRejected) {
  Heap other;
  ASSERT_TRUE(other.Init(&pages_, CurrentCore, 1).ok());
  void* p = other.Alloc(64);
  ASSERT_NE(p, nullptr);
  heap_.Free(p);
  EXPECT_EQ(ErrorCount(), 1u);
  EXPECT_EQ(heap_.GetStats().frees, 0u);
  other.Free(p);
  EXPECT_EQ(other.GetStats().frees, 1u);
}

TEST_F(HeapTest, OutOfRangeCoreIsReported) {
  t_core = kCores;
  EXPECT_EQ(heap_.Alloc(64), nullptr);
  EXPECT_EQ(ErrorCount(), 1u);
  EXPECT_NE(LastError().find("current_core"), std::string::npos);
  t_core = 0;
}

TEST_F(HeapTest, ThreadsAsCoresWithCrossCoreFrees) {
  struct Item {
    void* p;
    size_t size;
    uint64_t key;
  };
  std::mutex queue_mu;
  std::deque<Item> queue;
  std::atomic<int> bad{0};
  std::atomic<int> finished{0};
  constexpr int kOpsPerThread = 150'000;

  auto worker = [&](int core) {
    t_core = core;
    std::mt19937_64 rng(1000 + core);
    std::vector<Item> mine;
    uint64_t key = static_cast<uint64_t>(core) << 40;
    for (int i = 0; i < kOpsPerThread; i++) {
      uint64_t r = rng() % 100;
      if (r < 50 || mine.empty()) {
        size_t size = rng() % 16 == 0 ? rng() % (64 * kKiB) : rng() % 512;
        void* p = heap_.Alloc(size);
        if (p == nullptr) {
          bad++;
          continue;
        }
        Item item{p, size, ++key};
        Stamp(p, size, item.key);
        if (rng() % 3 == 0) {
          std::lock_guard<std::mutex> lock(queue_mu);
          queue.push_back(item);
        } else {
          mine.push_back(item);
        }
      } else if (r < 80) {
        size_t victim = rng() % mine.size();
        if (!CheckStamp(mine[victim].p, mine[victim].size, mine[victim].key)) bad++;
        heap_.Free(mine[victim].p);
        mine[victim] = mine.back();
        mine.pop_back();
      } else {
        Item item;
        {
          std::lock_guard<std::mutex> lock(queue_mu);
          if (queue.empty()) continue;
          item = queue.front();
          queue.pop_front();
        }
        if (!CheckStamp(item.p, item.size, item.key)) bad++;
        heap_.Free(item.p);  // usually allocated on another core
      }
    }
    for (const Item& item : mine) {
      if (!CheckStamp(item.p, item.size, item.key)) bad++;
      heap_.Free(item.p);
    }
    finished++;
    while (finished.load() < kCores) std::this_thread::yield();
    for (;;) {  // drain what the others left in the queue
      Item item;
      {
        std::lock_guard<std::mutex> lock(queue_mu);
        if (queue.empty()) break;
        item = queue.front();
        queue.pop_front();
      }
      if (!CheckStamp(item.p, item.size, item.key)) bad++;
      heap_.Free(item.p);
    }
    heap_.FlushCoreCache();
  };
  std::vector<std::thread> threads;
  for (int core = 0; core < kCores; core++) threads.emplace_back(worker, core);
  for (std::thread& t : threads) t.join();

  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(ErrorCount(), 0u);
  Heap::Stats s = heap_.GetStats();
  EXPECT_GT(s.allocs, static_cast<uint64_t>(kCores) * kOpsPerThread / 3);
  int64_t delta_sum = 0;
  for (int core = 0; core < kCores; core++) {
    Heap::CoreStats cs = heap_.GetCoreStats(core);
    EXPECT_GT(cs.allocs, 0u);
    EXPECT_EQ(cs.bytes_cached, 0u);
    delta_sum += cs.bytes_in_use_delta;
  }
  EXPECT_EQ(delta_sum, 0);
  ExpectAllReturned();
}

}  // namespace
}  // namespace fox::mem
