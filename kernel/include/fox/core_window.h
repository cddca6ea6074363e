// The per-core window (native): one fixed range of virtual addresses that
// shows different pages on every core. Code above the kernel keeps per-core
// data there that its hot path reaches at a constant address, with no GS- or
// FS-relative load: ebb/ keeps the Ebb translation table there, so that an
// EbbRef hit is one `mov kWindowAddress(,%id,8)` (ebb/local_table_window.cc).
// The kernel knows nothing of what a window holds.
//
// Until a core maps something there, its whole window reads as zeros and
// faults on a write (every page shows one shared zero page, read-only), from
// the core's first instruction above the kernel on: no per-core start-up
// hook is needed to make reading it safe.
//
// Hosted programs have no window (their cores are threads of one address
// space; they use thread_local), so the functions exist natively only.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fox::core {

// In the top 2 GiB, so that the address is a sign-extended 32-bit
// displacement.
inline constexpr uintptr_t kWindowAddress = 0xFFFFFFFF80000000ull;
inline constexpr size_t kWindowBytes = size_t{2} << 20;

#if defined(FOX_NATIVE)

// Shows [pages, pages + bytes) through the calling core's window, read-only
// unless `writable`; the rest of the window reads as zeros. `pages` is
// page-aligned memory from the kernel's allocators (identity-mapped, which
// every allocation is) and stays reachable at its own address; `bytes` is a
// multiple of 4 KiB, at most kWindowBytes. Changes the calling core's window
// only (and flushes its TLB), so it needs no lock: only the owning core ever
// changes a window. Thread context. Panics on a bad argument.
void MapWindow(const void* pages, size_t bytes, bool writable);

// What the calling core's window shows: `pages` of its last MapWindow, or
// nullptr while it reads as zeros. Any context.
const void* WindowPages();

#endif

}  // namespace fox::core
