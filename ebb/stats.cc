// Counters (see fox/ebb/stats.h).
#include "fox/ebb/stats.h"

#include "internal.h"

namespace fox::ebb {

namespace detail {
constinit Counters g_counters;
}  // namespace detail

using namespace detail;

Stats GetStats() {
  Stats s;
  s.created_ebbs = g_counters.created.load(std::memory_order_relaxed);
  s.destroyed_ebbs = g_counters.destroyed.load(std::memory_order_relaxed);
  s.live_ebbs = s.created_ebbs - s.destroyed_ebbs;
  s.reps_installed = g_counters.reps_installed.load(std::memory_order_relaxed);
  s.dead_faults = g_counters.dead_faults.load(std::memory_order_relaxed);
  s.retired_pending = g_counters.retired_pending.load(std::memory_order_relaxed);
  s.reclaimed = g_counters.reclaimed.load(std::memory_order_relaxed);
  s.ids_allocated = DefaultIdsAllocated();
  s.tables = g_counters.tables.load(std::memory_order_relaxed);
  for (const CoreState& cs : g_cores) {
    s.rep_misses += cs.rep_misses.load(std::memory_order_relaxed);
    s.far_lookups += cs.far_lookups.load(std::memory_order_relaxed);
  }
  return s;
}

CoreStats GetCoreStats(int core) {
  if (core < 0 || core >= core::kMaxCores) return {};
  return {g_cores[core].rep_misses.load(std::memory_order_relaxed),
          g_cores[core].far_lookups.load(std::memory_order_relaxed)};
}

}  // namespace fox::ebb
