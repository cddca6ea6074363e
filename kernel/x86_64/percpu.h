// Per-core data (native), reached through the GS base. The FS base belongs to
// the C library's thread pointer (TLS), so `thread_local` variables are
// per-core too. The third per-core mechanism is the page-table window
// (fox/core_window.h, paging.h), which percpu.cc exposes.
#pragma once

#include <cstdint>

namespace fox::percpu {

struct CoreLocal {
  CoreLocal* self;  // %gs:0
  int32_t index;    // %gs:8
  uint32_t apic_id;
  bool kernel_core;
  // A started processor before it has its thread (smp.cc): its wake-up IPI
  // is counted apart, so that the counts below start at 0 for good and a
  // reader never sees them go back.
  bool starting;
  uint64_t startup_wakes;
  uint64_t interrupts;          // all vectors
  uint64_t vector_counts[256];  // per vector
};

// Points this core's GS base at `local`. Boot step for every core, before
// anything calls core::Current().
void InitCore(CoreLocal* local, int index, bool kernel_core);

inline CoreLocal* Current() {
  CoreLocal* self;
  asm volatile("movq %%gs:0, %0" : "=r"(self));
  return self;
}

// The CoreLocal of an online core, or nullptr.
CoreLocal* Of(int core);

// Marks a core online (the SMP bring-up calls it as cores arrive).
void SetOnline(int core, CoreLocal* local);
void SetPresent(int count);
void SetKernelCores(int count);

}  // namespace fox::percpu
