// Kernel heap core (see fox/mem/heap.h for the contract and overview).
//
// Object life cycle. A slab is born with no object touched: objects
// [fresh, capacity) have never been handed out and are carved in address
// order once the free list is empty, so that a new slab costs no write to
// its pages (under an emulator or a hypervisor, each first touch of a page
// is a fault on the host) and memory is touched as it is used. A
// core's cache refills by taking a batch off the class's partial slabs
// (FetchBatch, under the class lock) and serves allocations from that list
// with plain loads and stores. A free pushes the object onto the freeing
// core's cache; when the cache holds more than two batches, one batch goes
// back to its slabs (ReturnBatch, under the class lock). slab->in_use counts
// objects neither on the slab's free list nor fresh (handed out or parked in
// a cache), so a slab is empty exactly when in_use reaches zero; the class
// then keeps it as its reserve or returns it to the page allocator after
// dropping the lock.
//
// Finding the slab of an object. Slabs are naturally aligned blocks of
// 2^order pages, every page tagged kTagSlab | order, the header in the last
// kSlabHeaderBytes. So header = (p & ~(slab_bytes - 1)) + slab_bytes - 64.
// Objects start at the slab base, so an object of a class of size s is
// aligned to the lowest set bit of s; aligned requests pick the first class
// that is aligned enough or fall through to whole page blocks.
//
// Free objects carry (next, key ^ address ^ next) in their first 16 bytes
// (every class is >= 16 B). Free checks it to catch double frees; popping
// checks it to catch writes to freed objects, leaking the rest of that list
// rather than following a bad pointer.
//
// Lock order: a class lock is never held while calling the page allocator;
// no two class locks are held at once. Nothing here allocates from a heap.
#include "fox/mem/heap.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <new>

namespace fox::mem {
namespace {

constexpr size_t kSlabHeaderBytes = 64;
constexpr int kMinSlabOrder = 4;     // 64 KiB
constexpr int kMaxSlabOrder = 8;     // 1 MiB
constexpr size_t kReserveSlabs = 1;  // empty slabs a class keeps
constexpr size_t kCacheBatchBytes = 16384;
constexpr uintptr_t kSlabMagic = 0x5ab1e5ab1e5ab1e5;

struct ClassInfo {
  uint32_t size = 0;
  uint32_t capacity = 0;  // objects per slab
  uint32_t batch = 0;     // objects per refill / flush
  uint8_t slab_order = 0;
  // ceil(2^64 / size): an offset's index and divisibility by `size` with a
  // multiplication instead of a division (every free asks; exact for 32-bit
  // offsets: Lemire, Kaser and Kurz, "Faster remainder by direct
  // computation", 2019).
  uint64_t inverse = 0;
};

static_assert((kPageSize << kMaxSlabOrder) <= (uint64_t{1} << 32), "slab offsets fit 32 bits (ClassInfo::inverse)");

struct ClassTable {
  ClassInfo info[Heap::kNumClasses];
};

// 16..128 in steps of 16, then 4 classes per power of two up to 32 KiB.
constexpr size_t ClassSizeOf(int c) {
  if (c < 8) return 16 * static_cast<size_t>(c + 1);
  int i = c - 8;
  return static_cast<size_t>(5 + i % 4) * (size_t{32} << (i / 4));
}

// Smallest class holding `size` bytes, size in [1, kMaxSmallSize].
constexpr int ClassIndexForSize(size_t size) {
  if (size <= 128) return static_cast<int>((size + 15) / 16) - 1;
  size_t s = size - 1;
  int lg = std::bit_width(s) - 1;
  return 8 + (lg - 7) * 4 + static_cast<int>((s >> (lg - 2)) & 3);
}

constexpr ClassTable MakeClassTable() {
  ClassTable table;
  for (int c = 0; c < Heap::kNumClasses; c++) {
    size_t size = ClassSizeOf(c);
    // The smallest slab holding at least 8 objects with at most 1/8 waste.
    int order = kMinSlabOrder;
    for (; order < kMaxSlabOrder; order++) {
      size_t bytes = kPageSize << order;
      size_t capacity = (bytes - kSlabHeaderBytes) / size;
      if (capacity >= 8 && (bytes - capacity * size) * 8 <= bytes) break;
    }
    ClassInfo& info = table.info[c];
    info.size = static_cast<uint32_t>(size);
    info.slab_order = static_cast<uint8_t>(order);
    info.capacity = static_cast<uint32_t>(((kPageSize << order) - kSlabHeaderBytes) / size);
    info.batch = static_cast<uint32_t>(std::clamp<size_t>(kCacheBatchBytes / size, 2, 64));
    info.inverse = ~uint64_t{0} / size + 1;
  }
  return table;
}

constexpr ClassTable kClasses = MakeClassTable();

static_assert(ClassSizeOf(Heap::kNumClasses - 1) == Heap::kMaxSmallSize);
static_assert(ClassIndexForSize(Heap::kMaxSmallSize) == Heap::kNumClasses - 1);
static_assert(ClassIndexForSize(129) == 8 && ClassSizeOf(8) == 160);
static_assert(ClassIndexForSize(257) == 12 && ClassSizeOf(12) == 320);

constexpr size_t ClassAlign(int c) { return size_t{1} << std::countr_zero(ClassSizeOf(c)); }

// Class for a request, or -1 for a large block.
int ClassFor(size_t size, size_t align) {
  if (size > Heap::kMaxSmallSize) return -1;
  int c = ClassIndexForSize(size);
  if (align <= Heap::kMinAlign) return c;
  for (; c < Heap::kNumClasses; c++) {
    if (ClassAlign(c) >= align) return c;
  }
  return -1;
}

uintptr_t LoadWord(const void* p, int i) {
  uintptr_t v;
  memcpy(&v, static_cast<const char*>(p) + i * sizeof(uintptr_t), sizeof(v));
  return v;
}

void StoreWord(void* p, int i, uintptr_t v) { memcpy(static_cast<char*>(p) + i * sizeof(uintptr_t), &v, sizeof(v)); }

void* Next(const void* object) { return reinterpret_cast<void*>(LoadWord(object, 0)); }

// Per-core counters are written only by their core: a relaxed load and store,
// no locked instruction, still well-defined for readers on other cores.
template <typename T>
void Bump(std::atomic<T>& counter, T delta) {
  counter.store(counter.load(std::memory_order_relaxed) + delta, std::memory_order_relaxed);
}

}  // namespace

struct Heap::Slab {
  uintptr_t magic;  // kSlabMagic ^ address of this header; 0 once released
  const Heap* owner;
  uint32_t capacity;
  uint16_t size_class;
  uint8_t order;
  // The rest is guarded by central_[size_class].lock.
  bool listed;      // on central.partial
  uint32_t in_use;  // objects neither on `free` nor fresh
  uint32_t fresh;   // objects [fresh, capacity) were never handed out
  void* free;       // free objects, linked through word 0
  Slab* prev;
  Slab* next;
};

struct alignas(64) Heap::CoreCache {
  struct ClassCache {
    void* head = nullptr;            // free objects, linked through word 0
    std::atomic<uint32_t> count{0};  // written by the owner core only
  };
  ClassCache cache[kNumClasses];
  std::atomic<uint64_t> allocs{0};
  std::atomic<uint64_t> frees{0};
  std::atomic<uint64_t> hits{0};
  std::atomic<uint64_t> misses{0};
  std::atomic<uint64_t> flushes{0};
  std::atomic<int64_t> bytes_in_use{0};
};

namespace {

uintptr_t SlabBase(const void* p, int order) { return reinterpret_cast<uintptr_t>(p) & ~((kPageSize << order) - 1); }

}  // namespace

size_t Heap::RoundUpSize(size_t size) {
  size_t want = size == 0 ? 1 : size;
  int c = ClassFor(want, kMinAlign);
  if (c >= 0) return ClassSizeOf(c);
  int order = PageAllocator::OrderForBytes(want);
  return order < 0 ? 0 : kPageSize << order;
}

Result<void> Heap::Init(PageAllocator* pages, int (*current_core)(), int max_cores) {
  static_assert(sizeof(Slab) <= kSlabHeaderBytes);
  if (pages == nullptr || current_core == nullptr || max_cores < 1 || max_cores > kMaxCores || cores_ != nullptr) {
    return Error::kInvalidArgument;
  }
  size_t bytes = sizeof(CoreCache) * static_cast<size_t>(max_cores);
  int order = PageAllocator::OrderForBytes(bytes);
  FOX_TRY_ASSIGN(void* block, pages->Alloc(order));
  for (size_t off = 0; off < (kPageSize << order); off += kPageSize) {
    pages->SetTag(static_cast<char*>(block) + off, kTagMeta);
  }
  auto* cores = static_cast<CoreCache*>(block);
  for (int i = 0; i < max_cores; i++) new (&cores[i]) CoreCache();
  bytes_reserved_.fetch_add(kPageSize << order, std::memory_order_relaxed);
  // Low bit set: key ^ address ^ next is never 0 for 16-byte aligned objects,
  // so a freshly allocated object (word 1 cleared) never looks free.
  cookie_key_ = (reinterpret_cast<uintptr_t>(this) * 0x9e3779b97f4a7c15u) ^ 0xf0c5a110c0de0001u;
  cookie_key_ |= 1;
  pages_ = pages;
  current_core_ = current_core;
  max_cores_ = max_cores;
  cores_ = cores;
  return Ok();
}

void Heap::SetOomHandler(OomHandler handler) { oom_handler_.store(handler, std::memory_order_relaxed); }

void Heap::SetErrorHandler(ErrorHandler handler) { error_handler_.store(handler, std::memory_order_relaxed); }

void Heap::Report(const char* what, const void* p) const {
  errors_.fetch_add(1, std::memory_order_relaxed);
  if (ErrorHandler handler = error_handler_.load(std::memory_order_relaxed)) handler(what, p);
}

Heap::CoreCache* Heap::ThisCore() const {
  if (cores_ == nullptr) {
    Report("heap used before Init", nullptr);
    return nullptr;
  }
  int core = current_core_();
  if (core < 0 || core >= max_cores_) {
    Report("current_core() out of range", nullptr);
    return nullptr;
  }
  return &cores_[core];
}

void Heap::MarkFree(void* object, void* next) const {
  uintptr_t n = reinterpret_cast<uintptr_t>(next);
  StoreWord(object, 0, n);
  StoreWord(object, 1, cookie_key_ ^ reinterpret_cast<uintptr_t>(object) ^ n);
}

bool Heap::IsFree(const void* object) const {
  return LoadWord(object, 1) == (cookie_key_ ^ reinterpret_cast<uintptr_t>(object) ^ LoadWord(object, 0));
}

Heap::Owner Heap::Classify(const void* p) const {
  if (pages_ == nullptr || !pages_->Contains(p)) {
    Report("pointer not allocated by this heap", p);
    return {};
  }
  uintptr_t addr = reinterpret_cast<uintptr_t>(p);
  uint8_t tag = pages_->Tag(p);
  if (tag == kTagLarge) {
    if ((addr & (kPageSize - 1)) != 0) {
      Report("interior pointer into a heap block", p);
      return {};
    }
    Result<int> order = pages_->OrderOf(p);
    if (!order.ok()) {
      Report("pointer not allocated by this heap (or already freed)", p);
      return {};
    }
    return {Kind::kLarge, -1, order.value()};
  }
  if ((tag & 0xF0) == kTagSlab) {
    int order = tag & 0x0F;
    uintptr_t base = SlabBase(p, order);
    auto* slab = reinterpret_cast<const Slab*>(base + (kPageSize << order) - kSlabHeaderBytes);
    if (slab->magic != (kSlabMagic ^ reinterpret_cast<uintptr_t>(slab)) || slab->owner != this ||
        slab->order != order || slab->size_class >= kNumClasses) {
      Report("pointer not allocated by this heap (or already freed)", p);
      return {};
    }
    const ClassInfo& info = kClasses.info[slab->size_class];
    uint64_t offset = addr - base;                           // < the slab's bytes: 32 bits
    bool whole = offset * info.inverse <= info.inverse - 1;  // offset % size == 0
    uint64_t index = uint64_t((static_cast<unsigned __int128>(info.inverse) * offset) >> 64);  // offset / size
    if (!whole || index >= slab->capacity) {
      Report("interior pointer into a heap block", p);
      return {};
    }
    return {Kind::kSmall, slab->size_class, -1};
  }
  Report("pointer not allocated by this heap (or already freed)", p);
  return {};
}

void* Heap::Alloc(size_t size, size_t align) {
  if (align == 0 || (align & (align - 1)) != 0) {
    failed_allocs_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  CoreCache* core = ThisCore();
  void* p = core != nullptr ? AllocInternal(size, align, core) : nullptr;
  if (p == nullptr) {
    failed_allocs_.fetch_add(1, std::memory_order_relaxed);
    if (core != nullptr) {
      if (OomHandler handler = oom_handler_.load(std::memory_order_relaxed)) handler(size, align);
    }
  }
  return p;
}

void* Heap::AllocInternal(size_t size, size_t align, CoreCache* core) {
  size_t want = size == 0 ? 1 : size;
  int c = ClassFor(want, align);
  return c >= 0 ? AllocSmall(c, core) : AllocLarge(want, align, core);
}

void* Heap::AllocSmall(int c, CoreCache* core) {
  CoreCache::ClassCache& cache = core->cache[c];
  void* object = cache.head;
  uint32_t count = cache.count.load(std::memory_order_relaxed);
  if (object != nullptr && !IsFree(object)) {
    Report("freed heap object was overwritten (use after free?)", object);
    cache.head = nullptr;  // leak the rest of the list rather than follow it
    count = 0;
    object = nullptr;
  }
  if (object != nullptr) {
    Bump<uint64_t>(core->hits, 1);
  } else {
    Bump<uint64_t>(core->misses, 1);
    count = static_cast<uint32_t>(FetchBatch(c, kClasses.info[c].batch, &cache.head));
    cache.count.store(count, std::memory_order_relaxed);
    if (count == 0) return nullptr;
    object = cache.head;
  }
  cache.head = Next(object);
  cache.count.store(count - 1, std::memory_order_relaxed);
  StoreWord(object, 1, 0);  // no longer looks free
  Bump<uint64_t>(core->allocs, 1);
  Bump<int64_t>(core->bytes_in_use, kClasses.info[c].size);
  return object;
}

void* Heap::AllocLarge(size_t size, size_t align, CoreCache* core) {
  int size_order = PageAllocator::OrderForBytes(size);
  int align_order = PageAllocator::OrderForBytes(align);
  if (size_order < 0 || align_order < 0) return nullptr;  // larger than any block
  int order = std::max(size_order, align_order);          // blocks are naturally aligned
  auto take = [this](int o) -> void* {
    Result<void*> block = pages_->Alloc(o);
    return block.ok() ? block.value() : nullptr;
  };
  void* block = take(order);
  if (block == nullptr) {
    Trim();
    block = take(order);
    if (block == nullptr) return nullptr;
  }
  pages_->SetTag(block, kTagLarge);
  size_t bytes = kPageSize << order;
  bytes_reserved_.fetch_add(bytes, std::memory_order_relaxed);
  bytes_large_.fetch_add(bytes, std::memory_order_relaxed);
  large_allocs_.fetch_add(1, std::memory_order_relaxed);
  Bump<uint64_t>(core->allocs, 1);
  Bump<int64_t>(core->bytes_in_use, static_cast<int64_t>(bytes));
  return block;
}

void Heap::Free(void* p) {
  if (p == nullptr) return;
  Owner owner = Classify(p);
  if (owner.kind == Kind::kInvalid) return;
  CoreCache* core = ThisCore();
  if (core == nullptr) return;  // reported; leaking is the safe choice
  if (owner.kind == Kind::kSmall) {
    FreeSmall(p, owner.size_class, core);
  } else {
    FreeLarge(p, owner.order, core);
  }
}

void Heap::FreeSmall(void* p, int c, CoreCache* core) {
  if (IsFree(p)) {
    Report("double free", p);
    return;
  }
  CoreCache::ClassCache& cache = core->cache[c];
  MarkFree(p, cache.head);
  cache.head = p;
  uint32_t count = cache.count.load(std::memory_order_relaxed) + 1;
  Bump<uint64_t>(core->frees, 1);
  Bump<int64_t>(core->bytes_in_use, -static_cast<int64_t>(kClasses.info[c].size));
  uint32_t batch = kClasses.info[c].batch;
  if (count > 2 * batch) {
    void* first = cache.head;
    void* last = first;
    for (uint32_t i = 1; i < batch; i++) last = Next(last);
    cache.head = Next(last);
    count -= batch;
    cache.count.store(count, std::memory_order_relaxed);
    Bump<uint64_t>(core->flushes, 1);
    ReturnBatch(c, first, batch);
    return;
  }
  cache.count.store(count, std::memory_order_relaxed);
}

void Heap::FreeLarge(void* p, int order, CoreCache* core) {
  if (!pages_->Free(p).ok()) {  // lost a race with another free of p
    Report("double free", p);
    return;
  }
  size_t bytes = kPageSize << order;
  bytes_reserved_.fetch_sub(bytes, std::memory_order_relaxed);
  bytes_large_.fetch_sub(bytes, std::memory_order_relaxed);
  large_frees_.fetch_add(1, std::memory_order_relaxed);
  Bump<uint64_t>(core->frees, 1);
  Bump<int64_t>(core->bytes_in_use, -static_cast<int64_t>(bytes));
}

void* Heap::Realloc(void* p, size_t size) {
  if (p == nullptr) return Alloc(size, kMinAlign);
  Owner owner = Classify(p);
  if (owner.kind == Kind::kInvalid) return nullptr;
  CoreCache* core = ThisCore();
  if (core == nullptr) return nullptr;
  size_t usable = owner.kind == Kind::kSmall ? kClasses.info[owner.size_class].size : kPageSize << owner.order;
  size_t want = size == 0 ? 1 : size;
  if (want <= usable && RoundUpSize(want) > usable / 2) return p;
  void* q = AllocInternal(want, kMinAlign, core);
  if (q == nullptr) {
    if (want <= usable) return p;  // shrinking in place is still an answer
    failed_allocs_.fetch_add(1, std::memory_order_relaxed);
    if (OomHandler handler = oom_handler_.load(std::memory_order_relaxed)) handler(size, kMinAlign);
    return nullptr;
  }
  memcpy(q, p, std::min(usable, want));
  if (owner.kind == Kind::kSmall) {
    FreeSmall(p, owner.size_class, core);
  } else {
    FreeLarge(p, owner.order, core);
  }
  return q;
}

size_t Heap::UsableSize(const void* p) const {
  if (p == nullptr) return 0;
  Owner owner = Classify(p);
  switch (owner.kind) {
    case Kind::kSmall: return kClasses.info[owner.size_class].size;
    case Kind::kLarge: return kPageSize << owner.order;
    case Kind::kInvalid: break;
  }
  return 0;
}

void Heap::LinkSlab(Central& central, Slab* slab) {
  slab->prev = nullptr;
  slab->next = central.partial;
  if (central.partial != nullptr) central.partial->prev = slab;
  central.partial = slab;
  slab->listed = true;
}

void Heap::UnlinkSlab(Central& central, Slab* slab) {
  if (slab->prev != nullptr) {
    slab->prev->next = slab->next;
  } else {
    central.partial = slab->next;
  }
  if (slab->next != nullptr) slab->next->prev = slab->prev;
  slab->prev = slab->next = nullptr;
  slab->listed = false;
}

size_t Heap::TakeFromSlab(Central& central, Slab* slab, size_t count, void** list, bool* corrupt) const {
  if (slab->in_use == 0 && slab->listed) central.empty_slabs--;
  size_t taken = 0;
  while (taken < count && slab->free != nullptr) {
    void* object = slab->free;
    if (!IsFree(object)) {
      *corrupt = true;
      slab->free = nullptr;  // drop the rest rather than follow a bad link
      break;
    }
    slab->free = Next(object);
    MarkFree(object, *list);
    *list = object;
    taken++;
  }
  // Then fresh objects, also after a bad link: nothing has ever held them.
  // (Skipping them there would leave the slab listed with nothing taken, and
  // FetchBatch would take from it forever.)
  size_t size = kClasses.info[slab->size_class].size;
  char* base = reinterpret_cast<char*>(SlabBase(slab, slab->order));
  for (; taken < count && slab->fresh < slab->capacity; taken++) {
    void* object = base + size_t{slab->fresh++} * size;
    MarkFree(object, *list);
    *list = object;
  }
  slab->in_use += static_cast<uint32_t>(taken);
  bool has_free = slab->free != nullptr || slab->fresh < slab->capacity;
  if (!has_free && slab->listed) UnlinkSlab(central, slab);
  if (has_free && !slab->listed) LinkSlab(central, slab);
  return taken;
}

size_t Heap::FetchBatch(int c, size_t count, void** list) {
  Central& central = central_[c];
  size_t got = 0;
  bool corrupt = false;
  {
    SpinGuard guard(central.lock);
    while (got < count && central.partial != nullptr) {
      got += TakeFromSlab(central, central.partial, count - got, list, &corrupt);
    }
  }
  if (got == 0) {
    // Take pages without holding the class lock (STYLE §5).
    Slab* slab = NewSlab(c);
    if (slab == nullptr) {
      Trim();
      slab = NewSlab(c);
    }
    if (slab != nullptr) {
      SpinGuard guard(central.lock);
      central.slabs++;
      got = TakeFromSlab(central, slab, count, list, &corrupt);
    }
  }
  if (corrupt) Report("freed heap object was overwritten (use after free?)", nullptr);
  return got;
}

void Heap::ReturnBatch(int c, void* list, size_t count) {
  Central& central = central_[c];
  int order = kClasses.info[c].slab_order;
  Slab* release = nullptr;
  {
    SpinGuard guard(central.lock);
    void* object = list;
    for (size_t i = 0; i < count; i++) {
      void* next = Next(object);
      auto* slab = reinterpret_cast<Slab*>(SlabBase(object, order) + (kPageSize << order) - kSlabHeaderBytes);
      MarkFree(object, slab->free);
      slab->free = object;
      if (!slab->listed) LinkSlab(central, slab);
      if (--slab->in_use == 0) {
        if (central.empty_slabs < kReserveSlabs) {
          central.empty_slabs++;
        } else {
          UnlinkSlab(central, slab);
          central.slabs--;
          slab->next = release;
          release = slab;
        }
      }
      object = next;
    }
  }
  ReleaseSlabs(release);
}

Heap::Slab* Heap::NewSlab(int c) {
  const ClassInfo& info = kClasses.info[c];
  Result<void*> block = pages_->Alloc(info.slab_order);
  if (!block.ok()) return nullptr;
  char* base = static_cast<char*>(block.value());
  size_t bytes = kPageSize << info.slab_order;
  for (size_t off = 0; off < bytes; off += kPageSize) {
    pages_->SetTag(base + off, static_cast<uint8_t>(kTagSlab | info.slab_order));
  }
  auto* slab = reinterpret_cast<Slab*>(base + bytes - kSlabHeaderBytes);
  slab->owner = this;
  slab->capacity = info.capacity;
  slab->size_class = static_cast<uint16_t>(c);
  slab->order = info.slab_order;
  slab->listed = false;
  slab->in_use = 0;
  slab->fresh = 0;
  slab->free = nullptr;
  slab->prev = slab->next = nullptr;
  slab->magic = kSlabMagic ^ reinterpret_cast<uintptr_t>(slab);
  bytes_reserved_.fetch_add(bytes, std::memory_order_relaxed);
  slabs_created_.fetch_add(1, std::memory_order_relaxed);
  return slab;
}

void Heap::ReleaseSlabs(Slab* list) {
  while (list != nullptr) {
    Slab* next = list->next;
    int order = list->order;
    list->magic = 0;  // stale pointers into it no longer validate
    void* base = reinterpret_cast<void*>(SlabBase(list, order));
    if (!pages_->Free(base).ok()) Report("page allocator rejected a heap slab", base);
    bytes_reserved_.fetch_sub(kPageSize << order, std::memory_order_relaxed);
    slabs_released_.fetch_add(1, std::memory_order_relaxed);
    list = next;
  }
}

void Heap::FlushCoreCache() {
  CoreCache* core = ThisCore();
  if (core == nullptr) return;
  for (int c = 0; c < kNumClasses; c++) {
    CoreCache::ClassCache& cache = core->cache[c];
    uint32_t count = cache.count.load(std::memory_order_relaxed);
    if (count == 0) continue;
    void* list = cache.head;
    cache.head = nullptr;
    cache.count.store(0, std::memory_order_relaxed);
    Bump<uint64_t>(core->flushes, 1);
    ReturnBatch(c, list, count);
  }
}

void Heap::Trim() {
  for (int c = 0; c < kNumClasses; c++) {
    Central& central = central_[c];
    Slab* release = nullptr;
    {
      SpinGuard guard(central.lock);
      Slab* slab = central.partial;
      while (slab != nullptr) {
        Slab* next = slab->next;
        if (slab->in_use == 0) {
          UnlinkSlab(central, slab);
          central.slabs--;
          slab->next = release;
          release = slab;
        }
        slab = next;
      }
      central.empty_slabs = 0;
    }
    ReleaseSlabs(release);
  }
}

Heap::CoreStats Heap::GetCoreStats(int core) const {
  CoreStats stats;
  if (cores_ == nullptr || core < 0 || core >= max_cores_) return stats;
  const CoreCache& cache = cores_[core];
  stats.allocs = cache.allocs.load(std::memory_order_relaxed);
  stats.frees = cache.frees.load(std::memory_order_relaxed);
  stats.cache_hits = cache.hits.load(std::memory_order_relaxed);
  stats.cache_misses = cache.misses.load(std::memory_order_relaxed);
  stats.cache_flushes = cache.flushes.load(std::memory_order_relaxed);
  stats.bytes_in_use_delta = cache.bytes_in_use.load(std::memory_order_relaxed);
  for (int c = 0; c < kNumClasses; c++) {
    stats.bytes_cached += size_t{cache.cache[c].count.load(std::memory_order_relaxed)} * kClasses.info[c].size;
  }
  return stats;
}

Heap::Stats Heap::GetStats() const {
  Stats stats;
  int64_t in_use = 0;
  for (int core = 0; core < max_cores_; core++) {
    CoreStats cs = GetCoreStats(core);
    stats.allocs += cs.allocs;
    stats.frees += cs.frees;
    stats.cache_hits += cs.cache_hits;
    stats.cache_misses += cs.cache_misses;
    stats.cache_flushes += cs.cache_flushes;
    stats.bytes_cached += cs.bytes_cached;
    in_use += cs.bytes_in_use_delta;
  }
  stats.bytes_in_use = in_use > 0 ? static_cast<size_t>(in_use) : 0;
  for (int c = 0; c < kNumClasses; c++) {
    SpinGuard guard(central_[c].lock);
    stats.slabs += central_[c].slabs;
    stats.empty_slabs += central_[c].empty_slabs;
  }
  stats.bytes_reserved = bytes_reserved_.load(std::memory_order_relaxed);
  stats.bytes_large = bytes_large_.load(std::memory_order_relaxed);
  stats.failed_allocs = failed_allocs_.load(std::memory_order_relaxed);
  stats.large_allocs = large_allocs_.load(std::memory_order_relaxed);
  stats.large_frees = large_frees_.load(std::memory_order_relaxed);
  stats.slabs_created = slabs_created_.load(std::memory_order_relaxed);
  stats.slabs_released = slabs_released_.load(std::memory_order_relaxed);
  stats.errors = errors_.load(std::memory_order_relaxed);
  return stats;
}

}  // namespace fox::mem
