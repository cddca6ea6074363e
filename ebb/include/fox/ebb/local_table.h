// Per-core translation tables: the one data structure on the EbbRef hot path.
//
// Each core owns a LocalTable whose slot i holds that core's representative of
// Ebb i, or null. An EbbRef dereference is
//
//     rep = ThisCoreTable()->slots[Raw(id)]     // natively one load from a fixed address
//     if (rep == nullptr) miss             // the one branch, predicted taken-not
//
// Ids at or above kDirectSlots have no slot of their own: LoadSlot sends them
// to slot 0 (kNullId, never filled), so they always take the miss path, which
// finds them in the core's "far" map (an ordered map under a per-core lock,
// tens of ns) without counting a representative miss. Keep hot Ebbs below
// kDirectSlots: static ids always are; dynamic ids are until 49152 of them
// have been handed out (id_allocator.h).
//
// A table is 512 KiB, allocated on the core's first miss (a core that never
// touches an Ebb costs nothing) and kept for the life of the node. Until then
// the core's hook points at EmptyTable(), a shared all-null table that is
// never written, so the hot path never tests for a missing table.
//
// ---- The platform hook --------------------------------------------------
// The platform makes ThisCoreTable() (hot path, inline) give this core's
// table, and SetThisCoreTable() (miss path, once per core) bind it. Three
// implementations:
//
//  * Fixed address (native; the build defines FOX_EBB_TABLE_ADDRESS as the
//    kernel's core::kWindowAddress): as EbbRT does, the table lives at the
//    same virtual address on every core, and each core's page tables map
//    that address to its own pages (fox/core_window.h, "the per-core
//    window"). ThisCoreTable() is a constant, so a hit is one load from
//    FOX_EBB_TABLE_ADDRESS + id * 8 (the address fits a sign-extended 32-bit
//    displacement) and never touches FS or GS. SetThisCoreTable(table) maps
//    the window onto `table`'s pages, which stay reachable at their own
//    (identity) address: the window is an alias that only the owning core's
//    hot path reads; every write (install, Destroy's clear from another
//    core) goes through the identity address in CoreState::table. A window
//    nothing is mapped into reads as zeros, like EmptyTable(), so the kernel
//    calls nothing in ebb/ when a core starts (InitCore() is harmless).
//    Defined in ebb/local_table_window.cc; leave local_table_hosted.cc out.
//
//  * thread_local (hosted, where each "core" is a thread):
//    ebb/local_table_hosted.cc defines `tls_core_table`, initialised to
//    EmptyTable(): `mov %fs:off, %rax`.
//
//  * GS-relative (when a kernel defines FOX_EBB_TABLE_GS_OFFSET): the kernel
//    reserves an 8-byte word at %gs:FOX_EBB_TABLE_GS_OFFSET in its per-core
//    block and calls fox::ebb::InitCore() on every core before that core
//    runs Ebb code; the word must never be read before that. Both accessors
//    are inline below; link nothing else (leave local_table_hosted.cc out).
//
// ThisCoreBacking() names the table the hook shows by its own address (for
// the fixed-address hook, not the window's; nullptr while the window shows
// zeros), so that the miss path can tell whether the calling thread is bound
// to its core's table.
//
// Either way the platform must guarantee what EbbRT's event model gives:
//  - a context never migrates between cores while it runs Ebb code (the
//    value read may be cached by the compiler within a function);
//  - core::Current() returns the index of the core the word belongs to.
#pragma once

#include <atomic>
#include <cstdint>

#include "fox/ebb/ebb_id.h"

namespace fox::ebb {

inline constexpr uint32_t kDirectSlots = 1u << 16;

// Page-aligned so that the fixed-address hook can map it page by page.
struct alignas(4096) LocalTable {
  // Written only under the owning Ebb's lock (install by the owning core,
  // clear by Destroy on any core); read lock-free by the owning core.
  std::atomic<void*> slots[kDirectSlots];
};

// The shared all-null table of cores that have not missed yet (defined in
// local_table.cc; never written).
extern LocalTable g_empty_table;
inline LocalTable* EmptyTable() { return &g_empty_table; }

// This core's representative of `id`, or null. Branch-free: ids at or above
// kDirectSlots read slot 0, which is never filled. Safe in any context.
[[gnu::always_inline]] inline void* LoadSlot(const LocalTable* table, EbbId id) {
  uint32_t index = Raw(id) < kDirectSlots ? Raw(id) : Raw(kNullId);
  return table->slots[index].load(std::memory_order_relaxed);
}

#if defined(FOX_EBB_TABLE_ADDRESS)

#if defined(FOX_EBB_TABLE_GS_OFFSET)
#error "define one of FOX_EBB_TABLE_ADDRESS and FOX_EBB_TABLE_GS_OFFSET"
#endif

// The per-core window: a constant, the pages behind it differ per core.
[[gnu::always_inline]] inline LocalTable* ThisCoreTable() {
  return reinterpret_cast<LocalTable*>(uintptr_t{FOX_EBB_TABLE_ADDRESS});
}
// Maps the calling core's window onto `table` (page-aligned, identity-
// mapped), writable unless it is EmptyTable(). Miss path and boot only.
void SetThisCoreTable(LocalTable* table);
LocalTable* ThisCoreBacking();

#elif defined(FOX_EBB_TABLE_GS_OFFSET)

[[gnu::always_inline]] inline LocalTable* ThisCoreTable() {
  LocalTable* table;
  asm("movq %%gs:%c1, %0" : "=r"(table) : "i"(FOX_EBB_TABLE_GS_OFFSET));
  return table;
}
inline void SetThisCoreTable(LocalTable* table) {
  asm volatile("movq %0, %%gs:%c1" : : "r"(table), "i"(FOX_EBB_TABLE_GS_OFFSET) : "memory");
}
inline LocalTable* ThisCoreBacking() { return ThisCoreTable(); }

#else

// Defined by the platform (ebb/local_table_hosted.cc). constinit: no dynamic
// initialiser, so reads compile to a plain TLS load without a wrapper call.
// Native images are static executables: local-exec saves the GOT load.
#if defined(FOX_NATIVE)
#define FOX_EBB_TLS_MODEL [[gnu::tls_model("local-exec")]]
#else
#define FOX_EBB_TLS_MODEL
#endif
extern constinit thread_local LocalTable* tls_core_table FOX_EBB_TLS_MODEL;

[[gnu::always_inline]] inline LocalTable* ThisCoreTable() { return tls_core_table; }
// Points the calling core's hook at `table`. Miss path only.
void SetThisCoreTable(LocalTable* table);
inline LocalTable* ThisCoreBacking() { return ThisCoreTable(); }

#endif

// Boot step for each core before it runs Ebb code: points the hook at
// EmptyTable() (required with FOX_EBB_TABLE_GS_OFFSET; harmless with
// thread_local and with FOX_EBB_TABLE_ADDRESS, whose window reads as zeros
// until bound).
// Thread context; no locks, no allocation.
void InitCore();

}  // namespace fox::ebb
