// Physical page allocator: a binary buddy allocator over one contiguous span.
//
// The span [base, base + size) is described by per-page metadata held in
// storage the caller provides (no allocation, so it can run before any heap
// exists): a state byte (head of a free or allocated block plus its order, or
// not a head), a user tag byte, and the free-list links of free block heads
// (page indices, one doubly linked list per order). The allocator never reads
// or writes the span itself: a free block is not touched until its owner
// touches it, so memory the node never uses is never written (a VM's host
// never has to back it, firmware-cleared memory stays cold).
//
// Setting up is proportional to use, not to the span: the per-page bytes are
// initialised a chunk of 512 pages at a time, when a block head in the chunk
// is first written or a block covering it is first allocated; a chunk never
// initialised reads as "no heads, tags 0". So Init costs one bit per chunk
// and AddFree a handful of writes per range, whatever their size.
//
// Blocks are naturally aligned on absolute addresses: a block of order k
// starts at a multiple of kPageSize << k, whatever the span's base. Every page
// starts out reserved; only ranges given to AddFree are ever handed out.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "fox/result.h"
#include "fox/spinlock.h"
#include "fox/thread_annotations.h"

namespace fox::mem {

constexpr size_t kPageSize = 4096;
constexpr int kPageShift = 12;
constexpr int kMaxOrder = 18;  // blocks of 2^0 .. 2^18 pages (4 KiB .. 1 GiB)

class PageAllocator {
 public:
  struct Stats {
    size_t span_pages = 0;                   // pages in [base, base + size)
    size_t total_pages = 0;                  // pages made available by AddFree
    size_t free_pages = 0;                   // of those, pages not allocated
    uint64_t allocs = 0;                     // successful Alloc calls
    uint64_t frees = 0;                      // successful Free calls
    uint64_t failed_allocs = 0;              // Alloc calls that returned kNoMemory
    int largest_free_order = -1;             // -1 when nothing is free
    size_t free_blocks[kMaxOrder + 1] = {};  // free blocks per order
  };

  constexpr PageAllocator() = default;
  PageAllocator(const PageAllocator&) = delete;
  PageAllocator& operator=(const PageAllocator&) = delete;

  // Bytes of metadata Init needs for the span [base, base + size): ten per
  // page (in whole chunks of 512 pages) and one bit per chunk, plus alignment
  // slack. Any context; pure.
  static size_t MetaBytes(uintptr_t base, size_t size);

  // Smallest order whose block holds `bytes` (0 for 0 bytes), or -1 when no
  // block is large enough. Any context; pure.
  static int OrderForBytes(size_t bytes);

  // Takes the span [base, base + size) (both page-aligned, size > 0, at most
  // 2^32 - 1 pages) with `meta` as metadata storage: MetaBytes(base, size)
  // bytes, any alignment, any contents, owned by the allocator from now on.
  // Every page starts out reserved. Writes only the chunk bitmap (one bit per
  // 512 pages), never the span. Boot context, once, before any other call and
  // before other cores can reach the allocator. Errors: kInvalidArgument
  // (misaligned, empty, wrapping, too large, null meta, already set up).
  Result<void> Init(uintptr_t base, size_t size, void* meta);

  // Makes the page-aligned range [start, start + size) allocatable, coalescing
  // it (and any free neighbours) into the largest naturally aligned blocks.
  // Costs O(log size) metadata writes, never touches the range. Errors: kInvalidArgument when the range is misaligned,
  // empty, outside the span, or contains a page that is not reserved (already free or allocated); nothing changes then.
  // Takes the allocator lock; thread context, never interrupt context; does not block beyond the spinlock.
  Result<void> AddFree(uintptr_t start, size_t size);

  // A naturally aligned block of 2^order pages; contents undefined (never
  // written by the allocator); the caller owns it until Free. Errors: kInvalidArgument (order outside
  // [0, kMaxOrder]), kNoMemory. Takes the allocator lock; thread context,
  // never interrupt context.
  Result<void*> Alloc(int order);

  // Returns a block obtained from Alloc; its order comes from the metadata.
  // Clears the tags of all its pages and merges it with free buddies.
  // Errors: kInvalidArgument when `block` is not the head of an allocated
  // block (double free, interior pointer, outside the span); nothing changes
  // then. Takes the allocator lock; thread context, never interrupt context.
  Result<void> Free(void* block);

  // Order of the allocated block whose head is `p`, or kInvalidArgument.
  // Takes the allocator lock; thread context.
  Result<int> OrderOf(const void* p) const;

  // Whether `p` lies inside the span. Any context; lock-free; pure after Init.
  bool Contains(const void* p) const;

  // One user byte per page: the heap records what a page belongs to. 0 for
  // reserved pages and after a block is freed. Lock-free (relaxed atomic
  // byte access); the caller keeps the meaning of a tag consistent with the
  // block's ownership (only the owner of a block writes its tags).
  // Precondition: Contains(p); out of span, Tag returns 0 and SetTag ignores.
  uint8_t Tag(const void* p) const;
  void SetTag(const void* p, uint8_t tag);

  // Snapshot of the counters (STYLE §12). Takes the allocator lock; thread
  // context.
  Stats GetStats() const;

 private:
  // State byte of a page. Reserved pages and the pages of a block other than
  // its head are alike (kNotHead): the free lists and block heads say which
  // pages were added, and AddFree checks overlaps against the heads.
  static constexpr uint8_t kNotHead = 0;
  static constexpr uint8_t kFreeHead = 0x40;   // | order: head of a free block
  static constexpr uint8_t kAllocHead = 0x80;  // | order: head of an allocated block
  static constexpr uint8_t kHeadMask = 0xC0;
  static constexpr uint8_t kOrderMask = 0x1F;
  static constexpr uint32_t kNoPage = UINT32_MAX;  // end of a free list
  static constexpr size_t kChunkShift = 9;         // pages per lazily set-up chunk: 512
  static constexpr size_t kChunkPages = size_t{1} << kChunkShift;

  // The metadata of chunk c is one record (kRecordBytes): its pages' tag
  // bytes (first, at an offset that does not depend on the chunk: Tag is on
  // every heap free), their state bytes, then their free-list links. Setting up a chunk
  // and heading a block in it write one record, one or two pages: under a
  // hypervisor each first write to a page of the guest's memory is a fault
  // on the host (4-9 us each here under QEMU), and with one array per kind
  // the boot's AddFree wrote four pages for each block it listed (56 faults
  // for 1 GiB, 30 with records).
  struct Links {
    uint32_t next, prev;  // page indices or kNoPage
  };
  static constexpr size_t kRecordBytes = 2 * kChunkPages + sizeof(Links) * kChunkPages;  // 5 KiB
  static_assert(kRecordBytes % alignof(Links) == 0);

  uintptr_t PageAddr(size_t index) const { return base_ + (index << kPageShift); }
  // The last chunk may be partial: its record is as long as its pages need,
  // its links aligned.
  static constexpr size_t LinksOffset(size_t pages) { return (2 * pages + alignof(Links) - 1) & ~(alignof(Links) - 1); }
  size_t PagesOf(size_t chunk) const { return std::min(kChunkPages, span_pages_ - (chunk << kChunkShift)); }
  uint8_t* Record(size_t chunk) const { return records_ + chunk * kRecordBytes; }
  uint8_t* TagByte(size_t index) const { return Record(index >> kChunkShift) + (index & (kChunkPages - 1)); }
  uint8_t& State(size_t index) const REQUIRES(lock_) {
    size_t chunk = index >> kChunkShift;
    return Record(chunk)[PagesOf(chunk) + (index & (kChunkPages - 1))];
  }
  // Meaningful for free block heads only; never read for other pages.
  Links& LinksOf(size_t index) const REQUIRES(lock_) {
    size_t chunk = index >> kChunkShift;
    return reinterpret_cast<Links*>(Record(chunk) + LinksOffset(PagesOf(chunk)))[index & (kChunkPages - 1)];
  }
  size_t PageIndex(uintptr_t addr) const { return (addr - base_) >> kPageShift; }

  // Whether chunk `c`'s per-page bytes are set up (else they read as
  // kNotHead and tag 0). Lock-free: Tag reads it.
  bool Ready(size_t chunk) const;
  // Sets up every chunk meeting [first, first + pages) that is not yet.
  void MakeReady(size_t first, size_t pages) REQUIRES(lock_);
  uint8_t StateOf(size_t index) const REQUIRES(lock_);
  void SetState(size_t index, uint8_t state) REQUIRES(lock_);
  // Whether a block head lies in [first, first + pages).
  bool HasHead(size_t first, size_t pages) const REQUIRES(lock_);

  void PushFree(size_t index, int order) REQUIRES(lock_);
  void RemoveFree(size_t index, int order) REQUIRES(lock_);
  // Inserts the block [index, index + 2^order) into the free lists after
  // merging it with free buddies. None of its pages may be a head.
  void InsertFree(size_t index, int order) REQUIRES(lock_);

  mutable SpinLock lock_;
  // Set once by Init, read-only afterwards.
  uintptr_t base_ = 0;
  size_t span_pages_ = 0;
  // One bit per chunk; set (release) under lock_, read lock-free (acquire).
  uint64_t* ready_ = nullptr;
  // A record per chunk (Record). State bytes and links are written and read
  // under lock_ (State, LinksOf); tag bytes are accessed atomically, and Tag
  // reads them without the lock.
  uint8_t* records_ = nullptr;
  uint32_t free_[kMaxOrder + 1] GUARDED_BY(lock_) = {};  // list heads (Init: kNoPage)
  size_t free_blocks_[kMaxOrder + 1] GUARDED_BY(lock_) = {};
  uint32_t nonempty_orders_ GUARDED_BY(lock_) = 0;  // bit k: free_[k] != kNoPage
  size_t total_pages_ GUARDED_BY(lock_) = 0;
  size_t free_pages_ GUARDED_BY(lock_) = 0;
  uint64_t allocs_ GUARDED_BY(lock_) = 0;
  uint64_t frees_ GUARDED_BY(lock_) = 0;
  uint64_t failed_allocs_ GUARDED_BY(lock_) = 0;
};

}  // namespace fox::mem
