// Buddy allocator core (see fox/mem/page_allocator.h for the contract).
//
// Invariants, all under lock_:
//  - every page of a block except its head has state kTail; the head has
//    kFreeHead|order or kAllocHead|order; pages never added are kReserved.
//    So splitting or merging rewrites only head bytes, and Free can validate
//    a pointer with one byte.
//  - free_[k] lists exactly the blocks whose head is kFreeHead|k; bit k of
//    nonempty_orders_ is set iff free_[k] is non-empty, so Alloc finds the
//    smallest usable order with one count-trailing-zeros.
//  - buddies are found on absolute page frame numbers (pfn ^ 2^k), so blocks
//    are naturally aligned in the address space whatever base_ is. A buddy
//    outside the span, reserved or of another order is never merged, which is
//    what keeps holes out of the free lists.
#include "fox/mem/page_allocator.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace fox::mem {

size_t PageAllocator::MetaBytes(uintptr_t /*base*/, size_t size) {
  return 2 * (size >> kPageShift);
}

int PageAllocator::OrderForBytes(size_t bytes) {
  size_t pages = (bytes >> kPageShift) + ((bytes & (kPageSize - 1)) != 0);
  if (pages <= 1) return 0;
  int order = std::bit_width(pages - 1);
  return order > kMaxOrder ? -1 : order;
}

Result<void> PageAllocator::Init(uintptr_t base, size_t size, void* meta) {
  if (meta == nullptr || size == 0 || (base & (kPageSize - 1)) != 0 ||
      (size & (kPageSize - 1)) != 0 || base + size < base || base + size == 0) {
    return Error::kInvalidArgument;
  }
  SpinGuard guard(lock_);
  if (state_ != nullptr) return Error::kInvalidArgument;
  base_ = base;
  span_pages_ = size >> kPageShift;
  state_ = static_cast<uint8_t*>(meta);
  tag_ = state_ + span_pages_;
  memset(state_, kReserved, span_pages_);
  memset(tag_, 0, span_pages_);
  return Ok();
}

bool PageAllocator::Contains(const void* p) const {
  uintptr_t addr = reinterpret_cast<uintptr_t>(p);
  return addr >= base_ && addr - base_ < (span_pages_ << kPageShift);
}

void PageAllocator::PushFree(size_t index, int order) {
  auto* block = reinterpret_cast<FreeBlock*>(PageAddr(index));
  block->prev = nullptr;
  block->next = free_[order];
  if (free_[order] != nullptr) free_[order]->prev = block;
  free_[order] = block;
  state_[index] = static_cast<uint8_t>(kFreeHead | order);
  free_blocks_[order]++;
  nonempty_orders_ |= 1u << order;
}

void PageAllocator::RemoveFree(size_t index, int order) {
  auto* block = reinterpret_cast<FreeBlock*>(PageAddr(index));
  if (block->prev != nullptr) {
    block->prev->next = block->next;
  } else {
    free_[order] = block->next;
  }
  if (block->next != nullptr) block->next->prev = block->prev;
  state_[index] = kTail;
  free_blocks_[order]--;
  if (free_[order] == nullptr) nonempty_orders_ &= ~(1u << order);
}

void PageAllocator::InsertFree(size_t index, int order) {
  uintptr_t pfn = base_ / kPageSize + index;
  uintptr_t first_pfn = base_ / kPageSize;
  while (order < kMaxOrder) {
    uintptr_t buddy_pfn = pfn ^ (uintptr_t{1} << order);
    if (buddy_pfn < first_pfn || buddy_pfn - first_pfn >= span_pages_) break;
    size_t buddy = buddy_pfn - first_pfn;
    if (state_[buddy] != (kFreeHead | order)) break;
    RemoveFree(buddy, order);
    pfn = std::min(pfn, buddy_pfn);
    order++;
  }
  PushFree(pfn - first_pfn, order);
}

Result<void> PageAllocator::AddFree(uintptr_t start, size_t size) {
  if (size == 0 || (start & (kPageSize - 1)) != 0 || (size & (kPageSize - 1)) != 0 ||
      !Contains(reinterpret_cast<const void*>(start)) ||
      (size >> kPageShift) > span_pages_ - PageIndex(start)) {
    return Error::kInvalidArgument;
  }
  size_t first = PageIndex(start);
  size_t count = size >> kPageShift;
  SpinGuard guard(lock_);
  for (size_t i = first; i < first + count; i++) {
    if (state_[i] != kReserved) return Error::kInvalidArgument;
  }
  memset(state_ + first, kTail, count);
  // Greedy split into the largest naturally aligned blocks; InsertFree also
  // merges with blocks added earlier.
  uintptr_t pfn = start >> kPageShift;
  size_t left = count;
  while (left > 0) {
    int order = std::min({static_cast<int>(std::countr_zero(pfn)),
                          static_cast<int>(std::bit_width(left)) - 1, kMaxOrder});
    InsertFree(PageIndex(pfn << kPageShift), order);
    pfn += uintptr_t{1} << order;
    left -= size_t{1} << order;
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
  size_t index = PageIndex(reinterpret_cast<uintptr_t>(free_[k]));
  RemoveFree(index, k);
  while (k > order) {  // keep the lower half, free the upper half
    k--;
    PushFree(index + (size_t{1} << k), k);
  }
  state_[index] = static_cast<uint8_t>(kAllocHead | order);
  free_pages_ -= size_t{1} << order;
  allocs_++;
  return reinterpret_cast<void*>(PageAddr(index));
}

Result<void> PageAllocator::Free(void* block) {
  uintptr_t addr = reinterpret_cast<uintptr_t>(block);
  if (!Contains(block) || (addr & (kPageSize - 1)) != 0) return Error::kInvalidArgument;
  size_t index = PageIndex(addr);
  SpinGuard guard(lock_);
  uint8_t state = state_[index];
  if ((state & kHeadMask) != kAllocHead) return Error::kInvalidArgument;
  int order = state & kOrderMask;
  size_t pages = size_t{1} << order;
  for (size_t i = index; i < index + pages; i++) {
    __atomic_store_n(&tag_[i], 0, __ATOMIC_RELAXED);
  }
  state_[index] = kTail;
  InsertFree(index, order);
  free_pages_ += pages;
  frees_++;
  return Ok();
}

Result<int> PageAllocator::OrderOf(const void* p) const {
  uintptr_t addr = reinterpret_cast<uintptr_t>(p);
  if (!Contains(p) || (addr & (kPageSize - 1)) != 0) return Error::kInvalidArgument;
  SpinGuard guard(lock_);
  uint8_t state = state_[PageIndex(addr)];
  if ((state & kHeadMask) != kAllocHead) return Error::kInvalidArgument;
  return static_cast<int>(state & kOrderMask);
}

uint8_t PageAllocator::Tag(const void* p) const {
  if (!Contains(p)) return 0;
  return __atomic_load_n(&tag_[PageIndex(reinterpret_cast<uintptr_t>(p))], __ATOMIC_RELAXED);
}

void PageAllocator::SetTag(const void* p, uint8_t tag) {
  if (!Contains(p)) return;
  __atomic_store_n(&tag_[PageIndex(reinterpret_cast<uintptr_t>(p))], tag, __ATOMIC_RELAXED);
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
  stats.largest_free_order =
      nonempty_orders_ == 0 ? -1 : static_cast<int>(std::bit_width(nonempty_orders_)) - 1;
  for (int k = 0; k <= kMaxOrder; k++) stats.free_blocks[k] = free_blocks_[k];
  return stats;
}

}  // namespace fox::mem
