// Per-core data (native), reached through the GS base. The FS base belongs to
// the C library's thread pointer (TLS), so `thread_local` variables are
// per-core too.
#pragma once

#include <cstdint>

namespace fox::percpu {

struct CoreLocal {
  CoreLocal* self;  // %gs:0
  int32_t index;    // %gs:8
  uint32_t apic_id;
};

// Points this core's GS base at `local`. Boot step for every core, before
// anything calls core::Current().
void InitCore(CoreLocal* local, int index);

// Marks `count` cores online (the SMP bring-up calls it as cores arrive).
void SetOnline(int count);
void SetPresent(int count);

}  // namespace fox::percpu
