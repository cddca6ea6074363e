// General-purpose kernel heap: size-class slabs with per-core caches, large
// blocks straight from the page allocator.
//
// Requests up to kMaxSmallSize bytes are rounded up to one of kNumClasses size
// classes (16 B steps up to 128 B, then four classes per power of two, so the
// waste is at most 15 B below 128 B and under 20% above). Objects of a class
// are carved from slabs: naturally aligned page-allocator blocks (64 KiB and
// up) whose pages are tagged kTagSlab | order, with the slab header in the last
// bytes of the slab, so Free finds the header by masking the pointer. Larger
// requests, and alignments no class provides, get a whole page-allocator block
// whose head page is tagged kTagLarge.
//
// Each core owns a small cache per class (an intrusive free list) that only it
// touches, with no lock and no atomic read-modify-write. Misses refill and
// overflows flush a batch from/to the class's central slab lists under that
// class's SpinLock. A slab whose last object comes back is returned to the
// page allocator unless the class keeps it as its one empty reserve slab.
//
// The heap never allocates from itself; its only metadata outside slabs is
// the per-core cache array, one page-allocator block taken by Init.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "fox/mem/page_allocator.h"
#include "fox/result.h"
#include "fox/spinlock.h"
#include "fox/thread_annotations.h"

namespace fox::mem {

class Heap {
 public:
  static constexpr size_t kMinAlign = 16;  // every allocation is at least this aligned
  static constexpr size_t kMaxSmallSize = 32768;
  static constexpr int kNumClasses = 40;
  static constexpr int kMaxCores = 256;
  // Page tags (PageAllocator::SetTag) the heap writes on pages it owns. Other
  // users of the same page allocator must not use these values.
  static constexpr uint8_t kTagLarge = 0xA1;  // head page of a large block
  static constexpr uint8_t kTagMeta = 0xA2;   // per-core cache array
  static constexpr uint8_t kTagSlab = 0xB0;   // | slab order (< 16): slab page

  using OomHandler = void (*)(size_t size, size_t align);
  using ErrorHandler = void (*)(const char* what, const void* p);

  struct Stats {
    size_t bytes_in_use = 0;     // usable bytes of live allocations
    size_t bytes_cached = 0;     // bytes of free objects parked in per-core caches
    size_t bytes_reserved = 0;   // bytes held from the page allocator (slabs,
                                 // large blocks, per-core cache array)
    size_t bytes_large = 0;      // of bytes_reserved: large blocks
    size_t slabs = 0;            // slabs held now
    size_t empty_slabs = 0;      // of those, empty ones kept as reserve
    uint64_t allocs = 0;         // successful Alloc (and moving Realloc)
    uint64_t frees = 0;          // successful Free
    uint64_t failed_allocs = 0;  // Alloc that returned nullptr
    uint64_t large_allocs = 0;
    uint64_t large_frees = 0;
    uint64_t cache_hits = 0;     // small allocations served by the core's cache
    uint64_t cache_misses = 0;   // ... that had to refill from the central lists
    uint64_t cache_flushes = 0;  // batches moved from a core cache to central
    uint64_t slabs_created = 0;
    uint64_t slabs_released = 0;
    uint64_t errors = 0;  // error-handler events: bad or double-freed
                          // pointers, overwritten free objects
  };

  struct CoreStats {
    uint64_t allocs = 0;
    uint64_t frees = 0;
    uint64_t cache_hits = 0;
    uint64_t cache_misses = 0;
    uint64_t cache_flushes = 0;
    int64_t bytes_in_use_delta = 0;  // allocated minus freed on this core;
                                     // negative after cross-core frees
    size_t bytes_cached = 0;
  };

  constexpr Heap() = default;
  Heap(const Heap&) = delete;
  Heap& operator=(const Heap&) = delete;

  // Sets the heap up over `pages` (initialised, borrowed for the heap's
  // lifetime). `current_core` returns the calling core's index in
  // [0, max_cores); the heap relies on a core not being preempted by another
  // heap user between that call and the end of the heap operation (true in
  // fox: no preemption, no heap use from interrupt handlers). Takes one
  // page-allocator block for the per-core caches. Boot context, once, before
  // any other call. Errors: kInvalidArgument (null argument, max_cores
  // outside [1, kMaxCores], already initialised), kNoMemory.
  Result<void> Init(PageAllocator* pages, int (*current_core)(), int max_cores);

  // `size` bytes aligned to `align` (a power of two), or nullptr when `align`
  // is not a power of two or memory is exhausted; in the latter case the OOM
  // handler is called first with the requested size and alignment. Size 0
  // gives a unique non-null pointer. The caller owns the result until Free.
  // Thread context only, never interrupt context; lock-free on a cache hit,
  // otherwise takes a class lock and possibly the page-allocator lock (never
  // both at once); does not block otherwise.
  void* Alloc(size_t size, size_t align = kMinAlign);

  // Returns `p` (from Alloc/Realloc of this heap; nullptr is ignored) to the
  // calling core's cache or, for large blocks, to the page allocator. A
  // pointer this heap does not own, an interior pointer or a detected double
  // free calls the error handler and changes nothing. Context and locks as
  // Alloc.
  void Free(void* p);

  // C realloc: nullptr `p` acts as Alloc(size); otherwise returns a pointer
  // to `size` bytes holding the old contents up to the smaller size (`p`
  // itself when it already fits and would not waste more than half). On
  // failure returns nullptr and leaves `p` allocated and untouched. The result
  // is kMinAlign-aligned (an alignment given to Alloc is not preserved when
  // the object moves). Context and locks as Alloc.
  void* Realloc(void* p, size_t size);

  // Bytes usable at `p` (class size or block size, >= the requested size);
  // 0 for nullptr; for a pointer the heap does not own, calls the error
  // handler and returns 0. Lock-free apart from a page-allocator OrderOf for
  // large blocks. Thread context.
  size_t UsableSize(const void* p) const;

  // Moves every object parked in the calling core's caches back to the
  // central lists (releasing slabs that become empty beyond the reserve).
  // Call on a core that goes idle or before measuring memory. Thread context.
  void FlushCoreCache();

  // Returns every empty reserve slab to the page allocator. Alloc does this by
  // itself before reporting out of memory. Takes each class lock in turn and
  // the page-allocator lock; thread context.
  void Trim();

  // Counters summed over all cores (STYLE §12); approximate while other cores
  // run. Takes each class lock briefly; thread context.
  Stats GetStats() const;
  // Counters of one core in [0, max_cores); zero for other values. Lock-free.
  CoreStats GetCoreStats(int core) const;

  // Called on out-of-memory (outside any lock) with the requested size and
  // alignment; may be null. The kernel logs "out of memory allocating N bytes".
  void SetOomHandler(OomHandler handler);
  // Called (outside any lock) when Free, Realloc or UsableSize get a pointer
  // the heap does not own, an interior pointer or a double free, or when a
  // freed object was overwritten; may be null (the event is still counted).
  void SetErrorHandler(ErrorHandler handler);

  // Usable size a request of `size` bytes with kMinAlign alignment gets
  // (size 0 counts as 1): the class size, or the page-block size above
  // kMaxSmallSize; 0 if no block is large enough. Pure.
  static size_t RoundUpSize(size_t size);

 private:
  struct Slab;
  struct CoreCache;

  // Central state of one size class.
  struct alignas(64) Central {
    SpinLock lock;
    Slab* partial GUARDED_BY(lock) = nullptr;  // slabs with free objects
    size_t slabs GUARDED_BY(lock) = 0;         // slabs held by this class
    size_t empty_slabs GUARDED_BY(lock) = 0;   // listed slabs with none in use
  };

  enum class Kind { kInvalid, kSmall, kLarge };
  struct Owner {
    Kind kind = Kind::kInvalid;
    int size_class = -1;  // kSmall
    int order = -1;       // kLarge
  };

  // Which allocation `p` is; reports and returns kInvalid for anything else.
  Owner Classify(const void* p) const;
  void Report(const char* what, const void* p) const;
  CoreCache* ThisCore() const;
  // Free objects hold (next, key ^ address ^ next) in their first two words,
  // which detects double frees and writes to freed objects.
  void MarkFree(void* object, void* next) const;
  bool IsFree(const void* object) const;

  // Alloc without the failure accounting and OOM handler (Realloc decides).
  void* AllocInternal(size_t size, size_t align, CoreCache* core);

  void* AllocSmall(int size_class, CoreCache* core);
  void* AllocLarge(size_t size, size_t align, CoreCache* core);
  void FreeSmall(void* p, int size_class, CoreCache* core);
  void FreeLarge(void* p, int order, CoreCache* core);

  // Moves up to `count` objects of the class onto *list (singly linked through
  // word 0); returns how many. Creates a slab if the class has none free.
  size_t FetchBatch(int size_class, size_t count, void** list);
  // Moves up to `count` free objects of `slab` onto *list. Stops early and
  // sets *corrupt when a free object was overwritten (the rest is leaked).
  size_t TakeFromSlab(Central& central, Slab* slab, size_t count, void** list, bool* corrupt) const
      REQUIRES(central.lock);
  // Returns the objects on `list` (`count` of them) to their slabs.
  void ReturnBatch(int size_class, void* list, size_t count);
  Slab* NewSlab(int size_class);
  void ReleaseSlabs(Slab* list);

  static void LinkSlab(Central& central, Slab* slab) REQUIRES(central.lock);
  static void UnlinkSlab(Central& central, Slab* slab) REQUIRES(central.lock);

  // Set once by Init.
  PageAllocator* pages_ = nullptr;
  int (*current_core_)() = nullptr;
  int max_cores_ = 0;
  CoreCache* cores_ = nullptr;
  uintptr_t cookie_key_ = 0;

  std::atomic<OomHandler> oom_handler_{nullptr};
  std::atomic<ErrorHandler> error_handler_{nullptr};

  mutable Central central_[kNumClasses];  // mutable: GetStats locks them

  // Slow-path counters (read-modify-write is fine here: page-allocator calls
  // or error paths).
  std::atomic<size_t> bytes_reserved_{0};
  std::atomic<size_t> bytes_large_{0};
  std::atomic<uint64_t> failed_allocs_{0};
  std::atomic<uint64_t> large_allocs_{0};
  std::atomic<uint64_t> large_frees_{0};
  std::atomic<uint64_t> slabs_created_{0};
  std::atomic<uint64_t> slabs_released_{0};
  mutable std::atomic<uint64_t> errors_{0};
};

}  // namespace fox::mem
