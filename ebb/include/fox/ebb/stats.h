// Counters of the Ebb object model (STYLE.md §12), for `fox status`.
#pragma once

#include <cstdint>

namespace fox::ebb {

struct Stats {
  uint64_t live_ebbs = 0;        // created and not destroyed
  uint64_t created_ebbs = 0;     // Create/CreateAt, and lazy static creations
  uint64_t destroyed_ebbs = 0;   // Destroy calls that succeeded
  uint64_t rep_misses = 0;       // dereferences that ran a fault handler (all cores)
  uint64_t far_lookups = 0;      // dereferences of ids >= kDirectSlots served by a far map
  uint64_t reps_installed = 0;   // table slots filled by fault handlers
  uint64_t dead_faults = 0;      // faults that threw DeadEbbError
  uint64_t retired_pending = 0;  // destroyed Ebbs (and abandoned lazy constructions)
                                 // whose memory waits for every core's quiescent point
  uint64_t reclaimed = 0;        // ... whose memory was freed
  uint64_t ids_allocated = 0;    // ids handed out by AllocateId
  int tables = 0;                // cores holding a translation table (512 KiB each)
};

struct CoreStats {
  uint64_t rep_misses = 0;
  uint64_t far_lookups = 0;
};

// Sums over cores; exact when no core is running Ebb code, approximate while
// they do. Thread context; lock-free.
Stats GetStats();
// Counters of core `core` in [0, core::kMaxCores); zeros otherwise. Lock-free.
CoreStats GetCoreStats(int core);

}  // namespace fox::ebb
