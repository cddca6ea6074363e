// Buddy allocator core (see fox/mem/page_allocator.h for the contract).
//
// Invariants, all under lock_:
//  - the head page of a block has state kFreeHead|order or kAllocHead|order;
//    every other page (inside a block, or never added) is kNotHead. So
//    splitting or merging rewrites only head bytes, and Free can validate a
//    pointer with one byte.
//  - free_[k] lists exactly the blocks whose head is kFreeHead|k, linked
//    through next_/prev_ (page indices) at the head's index; bit k of
//    nonempty_orders_ is set iff free_[k] is non-empty, so Alloc finds the
//    smallest usable order with one count-trailing-zeros.
//  - buddies are found on absolute page frame numbers (pfn ^ 2^k), so blocks
//    are naturally aligned in the address space whatever base_ is. A buddy
//    outside the span, reserved or of another order is never merged, which is
//    what keeps holes out of the free lists.
//  - a chunk (kChunkPages pages) whose ready_ bit is clear has no head and
//    all tags 0; its state and tag bytes are garbage until MakeReady. Every
//    page of an allocated block lies in ready chunks (Alloc makes them so),
//    which is what lets SetTag and Free write tags without checking.
//
// Why the links are not in the free blocks, as in xv6: a free block would be
// written at boot (AddFree) and on every split, so a node would touch memory
// spread over all of RAM before using it; with the links in the metadata the
// allocator never touches the span, and a stray write into freed memory
// cannot corrupt the free lists.
#include "fox/mem/page_allocator.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace fox::mem {
namespace {

constexpr size_t kChunkShiftPages = 9;

size_t Chunks(size_t pages) { return (pages + (size_t{1} << kChunkShiftPages) - 1) >> kChunkShiftPages; }
size_t ReadyWords(size_t pages) { return (Chunks(pages) + 63) / 64; }

}  // namespace

size_t PageAllocator::MetaBytes(uintptr_t /*base*/, size_t size) {
  size_t pages = size >> kPageShift;
  // Alignment slack, the ready bitmap, one record per chunk (the last one's
  // links aligned).
  size_t last = pages & (kChunkPages - 1);
  return alignof(uint64_t) + 8 * ReadyWords(pages) + kRecordBytes * (pages >> kChunkShift) +
         (last == 0 ? 0 : LinksOffset(last) + sizeof(Links) * last);
}

int PageAllocator::OrderForBytes(size_t bytes) {
  size_t pages = (bytes >> kPageShift) + ((bytes & (kPageSize - 1)) != 0);
  if (pages <= 1) return 0;
  int order = std::bit_width(pages - 1);
  return order > kMaxOrder ? -1 : order;
}

Result<void> PageAllocator::Init(uintptr_t base, size_t size, void* meta) {
  static_assert(kChunkShift == kChunkShiftPages);
  if (meta == nullptr || size == 0 || (base & (kPageSize - 1)) != 0 || (size & (kPageSize - 1)) != 0 ||
      base + size < base || base + size == 0 || (size >> kPageShift) >= kNoPage) {
    return Error::kInvalidArgument;
  }
  SpinGuard guard(lock_);
  if (records_ != nullptr) return Error::kInvalidArgument;
  base_ = base;
  span_pages_ = size >> kPageShift;
  uintptr_t p = (reinterpret_cast<uintptr_t>(meta) + alignof(uint64_t) - 1) & ~(alignof(uint64_t) - 1);
  ready_ = reinterpret_cast<uint64_t*>(p);
  records_ = reinterpret_cast<uint8_t*>(ready_ + ReadyWords(span_pages_));
  memset(ready_, 0, 8 * ReadyWords(span_pages_));
  for (uint32_t& head : free_) head = kNoPage;
  return Ok();
}

bool PageAllocator::Contains(const void* p) const {
  uintptr_t addr = reinterpret_cast<uintptr_t>(p);
  return addr >= base_ && addr - base_ < (span_pages_ << kPageShift);
}

bool PageAllocator::Ready(size_t chunk) const {
  return (__atomic_load_n(&ready_[chunk / 64], __ATOMIC_ACQUIRE) >> (chunk % 64)) & 1;
}

void PageAllocator::MakeReady(size_t first, size_t pages) {
  for (size_t c = first >> kChunkShift; c <= (first + pages - 1) >> kChunkShift; c++) {
    if (Ready(c)) continue;
    size_t n = PagesOf(c);
    memset(Record(c), 0, n);             // tags
    memset(Record(c) + n, kNotHead, n);  // states
    // Tag reads the bit without the lock: the bytes before the bit.
    __atomic_fetch_or(&ready_[c / 64], uint64_t{1} << (c % 64), __ATOMIC_RELEASE);
  }
}

uint8_t PageAllocator::StateOf(size_t index) const { return Ready(index >> kChunkShift) ? State(index) : kNotHead; }

void PageAllocator::SetState(size_t index, uint8_t state) {
  if (state == kNotHead && !Ready(index >> kChunkShift)) return;  // reads so already
  MakeReady(index, 1);
  State(index) = state;
}

bool PageAllocator::HasHead(size_t first, size_t pages) const {
  size_t end = first + pages;
  for (size_t i = first; i < end;) {
    size_t chunk_end = std::min(end, ((i >> kChunkShift) + 1) << kChunkShift);
    if (Ready(i >> kChunkShift)) {
      for (; i < chunk_end; i++) {
        if (State(i) != kNotHead) return true;
      }
    }
    i = chunk_end;
  }
  return false;
}

void PageAllocator::PushFree(size_t index, int order) {
  uint32_t head = free_[order];
  LinksOf(index) = {head, kNoPage};
  if (head != kNoPage) LinksOf(head).prev = static_cast<uint32_t>(index);
  free_[order] = static_cast<uint32_t>(index);
  SetState(index, static_cast<uint8_t>(kFreeHead | order));
  free_blocks_[order]++;
  nonempty_orders_ |= 1u << order;
}

void PageAllocator::RemoveFree(size_t index, int order) {
  auto [next, prev] = LinksOf(index);
  if (prev != kNoPage) {
    LinksOf(prev).next = next;
  } else {
    free_[order] = next;
  }
  if (next != kNoPage) LinksOf(next).prev = prev;
  SetState(index, kNotHead);
  free_blocks_[order]--;
  if (free_[order] == kNoPage) nonempty_orders_ &= ~(1u << order);
}

void PageAllocator::InsertFree(size_t index, int order) {
  uintptr_t pfn = base_ / kPageSize + index;
  uintptr_t first_pfn = base_ / kPageSize;
  while (order < kMaxOrder) {
    uintptr_t buddy_pfn = pfn ^ (uintptr_t{1} << order);
    if (buddy_pfn < first_pfn || buddy_pfn - first_pfn >= span_pages_) break;
    size_t buddy = buddy_pfn - first_pfn;
    if (StateOf(buddy) != (kFreeHead | order)) break;
    RemoveFree(buddy, order);
    pfn = std::min(pfn, buddy_pfn);
    order++;
  }
  PushFree(pfn - first_pfn, order);
}

Result<void> PageAllocator::AddFree(uintptr_t start, size_t size) {
  if (size == 0 || (start & (kPageSize - 1)) != 0 || (size & (kPageSize - 1)) != 0 ||
      !Contains(reinterpret_cast<const void*>(start)) || (size >> kPageShift) > span_pages_ - PageIndex(start)) {
    return Error::kInvalidArgument;
  }
  size_t first = PageIndex(start);
  size_t count = size >> kPageShift;
  uintptr_t first_pfn = base_ / kPageSize;
  SpinGuard guard(lock_);
  // Overlap with a block added before: a head inside the range, or a block
  // of order k >= 1 starting below it, whose head is then the range's start
  // rounded down to 2^k pages.
  if (HasHead(first, count)) return Error::kInvalidArgument;
  for (int k = 1; k <= kMaxOrder; k++) {
    uintptr_t head_pfn = (start >> kPageShift) & ~((uintptr_t{1} << k) - 1);
    if (head_pfn < first_pfn) break;
    uint8_t state = StateOf(head_pfn - first_pfn);
    if (state != kNotHead && (state & kOrderMask) >= k) return Error::kInvalidArgument;
  }
  // Greedy split into the largest naturally aligned blocks; InsertFree also
  // merges with blocks added earlier. Inserted from the top down, so that
  // of two free blocks of one order the lower one heads its list: memory
  // is handed out from the bottom of each range up, and a node that uses
  // little memory touches little of it (on a VM, few of the host's pages).
  uintptr_t end_pfn = (start >> kPageShift) + count;
  size_t left = count;
  while (left > 0) {
    int order =
        std::min({static_cast<int>(std::countr_zero(end_pfn)), static_cast<int>(std::bit_width(left)) - 1, kMaxOrder});
    end_pfn -= uintptr_t{1} << order;
    left -= size_t{1} << order;
    InsertFree(PageIndex(end_pfn << kPageShift), order);
  }
  total_pages_ += count;
  free_pages_ += count;
  return Ok();
}

Result<void*> PageAllocator::Alloc(int order) {
  if (order < 0 || order > kMaxOrder) return Error::kInvalidArgument;
  SpinGuard guard(lock_);
  uint32_t usable = nonempty_orders_ & ~((1u << order) - 1);
  if (usable == 0) {
    failed_allocs_++;
    return Error::kNoMemory;
  }
  int k = std::countr_zero(usable);
  size_t index = free_[k];
  RemoveFree(index, k);
  while (k > order) {  // keep the lower half, free the upper half
    k--;
    PushFree(index + (size_t{1} << k), k);
  }
  // The block's tags are its owner's from now on (SetTag, Free): set up.
  MakeReady(index, size_t{1} << order);
  State(index) = static_cast<uint8_t>(kAllocHead | order);
  free_pages_ -= size_t{1} << order;
  allocs_++;
  return reinterpret_cast<void*>(PageAddr(index));
}

Result<void> PageAllocator::Free(void* block) {
  uintptr_t addr = reinterpret_cast<uintptr_t>(block);
  if (!Contains(block) || (addr & (kPageSize - 1)) != 0) return Error::kInvalidArgument;
  size_t index = PageIndex(addr);
  SpinGuard guard(lock_);
  uint8_t state = StateOf(index);
  if ((state & kHeadMask) != kAllocHead) return Error::kInvalidArgument;
  int order = state & kOrderMask;
  size_t pages = size_t{1} << order;
  for (size_t i = index; i < index + pages; i++) {
    __atomic_store_n(TagByte(i), 0, __ATOMIC_RELAXED);
  }
  State(index) = kNotHead;
  InsertFree(index, order);
  free_pages_ += pages;
  frees_++;
  return Ok();
}

Result<int> PageAllocator::OrderOf(const void* p) const {
  uintptr_t addr = reinterpret_cast<uintptr_t>(p);
  if (!Contains(p) || (addr & (kPageSize - 1)) != 0) return Error::kInvalidArgument;
  SpinGuard guard(lock_);
  uint8_t state = StateOf(PageIndex(addr));
  if ((state & kHeadMask) != kAllocHead) return Error::kInvalidArgument;
  return static_cast<int>(state & kOrderMask);
}

uint8_t PageAllocator::Tag(const void* p) const {
  if (!Contains(p)) return 0;
  size_t index = PageIndex(reinterpret_cast<uintptr_t>(p));
  if (!Ready(index >> kChunkShift)) return 0;
  return __atomic_load_n(TagByte(index), __ATOMIC_RELAXED);
}

void PageAllocator::SetTag(const void* p, uint8_t tag) {
  if (!Contains(p)) return;
  size_t index = PageIndex(reinterpret_cast<uintptr_t>(p));
  if (!Ready(index >> kChunkShift)) return;  // not allocated: nobody owns it
  __atomic_store_n(TagByte(index), tag, __ATOMIC_RELAXED);
}

PageAllocator::Stats PageAllocator::GetStats() const {
  SpinGuard guard(lock_);
  Stats stats;
  stats.span_pages = span_pages_;
  stats.total_pages = total_pages_;
  stats.free_pages = free_pages_;
  stats.allocs = allocs_;
  stats.frees = frees_;
  stats.failed_allocs = failed_allocs_;
  stats.largest_free_order = nonempty_orders_ == 0 ? -1 : static_cast<int>(std::bit_width(nonempty_orders_)) - 1;
  for (int k = 0; k <= kMaxOrder; k++) stats.free_blocks[k] = free_blocks_[k];
  return stats;
}

}  // namespace fox::mem
