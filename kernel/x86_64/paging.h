// Page tables (native). Memory is identity-mapped: virtual == physical for
// all RAM and the MMIO hole below 4 GiB, with 1 GiB pages where the CPU has
// them (pdpe1gb) and 2 MiB pages otherwise. The first 2 MiB use 4 KiB pages so
// that page 0 stays unmapped and null dereferences fault.
#pragma once

#include <cstdint>

#include "fox/result.h"

namespace fox::paging {

// Allocates one zeroed 4 KiB page for a page table, or returns 0.
using TableAllocator = uintptr_t (*)();

// Boot step: builds and loads the final tables covering [0, top). Uses
// `alloc` for table pages (the early bump allocator at boot).
Result<void> Init(uint64_t top, TableAllocator alloc);

// Later table pages (splits) come from here.
void SetTableAllocator(TableAllocator alloc);

// Removes the 4 KiB page at `va` (splitting a large page if needed): a guard
// page. Not from interrupt context.
Result<void> UnmapPage(uintptr_t va);

// Maps the 4 KiB page at `va` again (identity, read-write) after UnmapPage,
// on every core.
Result<void> MapPage(uintptr_t va);

// True if `va` is mapped. Safe anywhere (used by the panic handler).
bool IsMapped(uintptr_t va);

// Names a known region containing `va` for fault reports ("the guard page of
// the main stack"), or nullptr. Regions register with NameRegion.
const char* DescribeAddress(uintptr_t va);
// At most kMaxNamedRegions at a time; the name must outlive the region.
void NameRegion(uintptr_t start, uintptr_t end, const char* name);
void UnnameRegion(uintptr_t start);

bool HasGiantPages();

}  // namespace fox::paging
