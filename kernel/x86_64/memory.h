// Memory bring-up and the C allocation functions (native).
//
// Boot: the memory map from the loader -> final page tables (early bump
// allocator right after the image) -> the buddy page allocator over all
// usable RAM above 1 MiB -> the general heap, which provides malloc, free,
// calloc, realloc, aligned_alloc, posix_memalign and so operator new/delete.
// None of these may be called from interrupt context.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fox/mem/heap.h"
#include "fox/mem/page_allocator.h"
#include "fox/result.h"
#include "multiboot.h"

namespace fox::memory {

// Boot step. `max_cores` bounds the core numbers that will ever run (the
// heap keeps per-core caches for that many, not for core::kMaxCores). Fails
// only if there is not enough RAM to boot at all.
Result<void> Init(const boot::BootInfo& info, int max_cores);

mem::PageAllocator& Pages();
mem::Heap& Heap();
uint64_t UsableBytes();

// Whole zeroed pages for anonymous mmap; nullptr when out of memory.
void* AllocPagesZeroed(size_t bytes);
void FreePages(void* p, size_t bytes);

// A stack of `bytes` (rounded up to a power-of-two number of pages) with an
// unmapped guard page below it; an overflow faults and the panic names `name`.
// Returns the top of the stack, or 0.
uintptr_t AllocStack(size_t bytes, const char* name);
// Returns a stack from AllocStack (its guard page is mapped again).
void FreeStack(uintptr_t top, size_t bytes);

}  // namespace fox::memory
