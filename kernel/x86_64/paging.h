// Page tables (native). Memory is identity-mapped: virtual == physical for
// all RAM and the MMIO hole below 4 GiB, with 1 GiB pages where the CPU has
// them (pdpe1gb) and 2 MiB pages otherwise. The first 2 MiB use 4 KiB pages so
// that page 0 stays unmapped and null dereferences fault.
//
// ---- Address map (virtual; one PML4 entry = 512 GiB) ---------------------
//   [0, 512 GiB)              PML4[0]     identity map of RAM and the MMIO hole
//   [512 GiB, 2.5 TiB)        PML4[1..4]  SAS segments (fox/sas.h)
//   [-2 GiB, -2 GiB + 2 MiB)  PML4[511]   the per-core window (kCoreWindow)
//   everything else                       unmapped, never used
// Every core runs on its own PML4 (NewCoreRoot): a copy of the shared one
// plus entry 511, whose lower tables are the core's own, so the same virtual
// address shows different pages on each core (fox/core_window.h; EbbRT's
// per-core translation table lives there). The shared top-level entries are
// all created at boot (Init) and never change, so the copies never go stale
// and need no propagation or shootdown: later mappings (SAS segments, splits,
// guard pages) change only lower-level tables, which every PML4 shares.
// MapLarge refuses an address without a boot-time top-level entry rather
// than create one that only the shared PML4 would have.
// The window sits in the top 2 GiB so that its address is a sign-extended
// 32-bit displacement: a load from it is one `mov -0x80000000(,%idx,8)`.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fox/core_window.h"
#include "fox/result.h"

namespace fox::paging {

// Allocates one zeroed 4 KiB page for a page table, or returns 0.
using TableAllocator = uintptr_t (*)();

// Boot step: completes the tables boot.S loaded (the image carries those of
// the first 4 GiB) to cover [0, top), unmaps page 0 and loads them. Uses
// `alloc` for table pages (the early bump allocator at boot).
Result<void> Init(uint64_t top, TableAllocator alloc);

// Returns a page from a TableAllocator.
using TableFree = void (*)(uintptr_t page);

// Later table pages (splits, per-core roots) come from `alloc`; `free`
// takes back the tables of a per-core root no core used (FreeCoreRoot).
void SetTableAllocator(TableAllocator alloc, TableFree free);

// Removes the 4 KiB page at `va` (splitting a large page if needed): a guard
// page. Not from interrupt context.
Result<void> UnmapPage(uintptr_t va);

// Maps the 4 KiB page at `va` again (identity, read-write) after UnmapPage,
// on every core.
Result<void> MapPage(uintptr_t va);

// Maps [va, va+bytes) to [pa, pa+bytes) with 1 GiB pages where both are
// 1 GiB-aligned (and the CPU has them), else 2 MiB pages; both must be
// 2 MiB-aligned. Only in unmapped space (kAlreadyExists otherwise) inside
// the identity or SAS ranges of the address map above (kInvalidArgument
// otherwise, and for an empty range).
Result<void> MapLarge(uintptr_t va, uintptr_t pa, size_t bytes, bool writable);
// Changes write permission of a MapLarge range (this core's TLB only; see
// ShootdownTlb). Returns the physical address of each large page through
// `visit` when given, for freeing.
Result<void> ProtectLarge(uintptr_t va, size_t bytes, bool writable);
// Removes a MapLarge range, calling visit(pa, page_bytes) for each page.
Result<void> UnmapLarge(uintptr_t va, size_t bytes, void (*visit)(uintptr_t pa, size_t bytes));

// Flushes every online core's TLB and waits until all have done it.
// Event context (interrupts enabled), not interrupt context.
void ShootdownTlb();
// The shootdown IPI's handler: flush, then acknowledge. Interrupt context.
void AckShootdown();

// True if `va` is mapped. Safe anywhere (used by the panic handler).
bool IsMapped(uintptr_t va);

// Names a known region containing `va` for fault reports ("the guard page of
// the main stack"), or nullptr. Regions register with NameRegion.
const char* DescribeAddress(uintptr_t va);
// At most kMaxNamedRegions at a time; the name must outlive the region.
void NameRegion(uintptr_t start, uintptr_t end, const char* name);
void UnnameRegion(uintptr_t start);

bool HasGiantPages();

// ---- Per-core tables --------------------------------------------------------
inline constexpr uintptr_t kCoreWindow = core::kWindowAddress;
inline constexpr size_t kCoreWindowBytes = core::kWindowBytes;  // one page table
static_assert(kCoreWindowBytes == size_t{2} << 20, "the window is one page table");

// The shared PML4 (physical address, below 4 GiB): what a starting
// processor loads before it has its own.
uint64_t SharedRoot();

// A new PML4 for one core (see the address map above), its window reading
// as zeros: for the core itself or prepared for it by another (the boot
// core prepares every processor's before starting them, so that they start
// without taking the table lock). After Init and SetTableAllocator. Thread
// context; allocates four table pages. Returns the root's physical address,
// or kNoMemory.
Result<uint64_t> NewCoreRoot();
// Returns a root from NewCoreRoot that no core ever loaded (a processor
// that did not start).
void FreeCoreRoot(uint64_t root);
// Switches the calling core to `root` from NewCoreRoot. Before the core
// touches its window; interrupts off.
void LoadCoreRoot(uint64_t root);
// NewCoreRoot then LoadCoreRoot, on the calling core (the boot core).
Result<void> InitCore();

// Maps the calling core's window [kCoreWindow, kCoreWindow + bytes) to
// [pa, pa + bytes) (4 KiB pages; pa page-aligned, bytes a multiple of 4 KiB
// and at most kCoreWindowBytes), the rest to the zero page, on this core
// only, and flushes this core's TLB. Panics on a bad argument or a core
// without its own root. No lock: only the owning core ever changes its
// window. Thread context.
void MapCoreWindow(uintptr_t pa, size_t bytes, bool writable);
// The physical address the calling core's window starts at, or 0 while it
// shows the zero page.
uintptr_t CoreWindowTarget();

// The physical address `va` maps to on the calling core, or 0 if unmapped.
// Safe anywhere (no lock; a concurrent change may give a stale answer).
uintptr_t Translate(uintptr_t va);

}  // namespace fox::paging
