// Per-core tables and the start of the miss path (see fox/ebb/local_table.h).
#include "fox/ebb/local_table.h"

#include "fox/ebb/ebb_ref.h"
#include "internal.h"

namespace fox::ebb {

// Shared by every core until its first miss; all null and never written.
constinit LocalTable g_empty_table{};

namespace detail {

constinit CoreState g_cores[core::kMaxCores];

int ThisCoreIndex() {
  int core = core::Current();
  FOX_EBB_CHECK(core >= 0 && core < core::kMaxCores);
  return core;
}

CoreState& AttachThisCore() {
  CoreState& cs = g_cores[ThisCoreIndex()];
  LocalTable* table = cs.table.load(std::memory_order_acquire);
  if (table == nullptr) [[unlikely]] {
    // The core's first miss. Allocate before any lock; a losing racer (two
    // hosted threads claiming the same core) frees its copies.
    auto fresh_table = std::make_unique<LocalTable>();
    auto fresh_far = std::make_unique<FarMap>();
    {
      SpinGuard guard(cs.far_lock);
      if (cs.far == nullptr) cs.far = fresh_far.release();
    }
    if (cs.table.compare_exchange_strong(table, fresh_table.get(), std::memory_order_acq_rel)) {
      table = fresh_table.release();
      g_counters.tables.fetch_add(1, std::memory_order_relaxed);
    }
  }
  // A hosted thread taking over a core binds to that core's table here.
  if (ThisCoreBacking() != table) SetThisCoreTable(table);
  EnsureUsingReps(cs);
  return cs;
}

void* BeginMiss(EbbId id) {
  CoreState& cs = AttachThisCore();
  if (Raw(id) < kDirectSlots) {
    // Non-null only when this thread was just bound to its core's table.
    if (void* rep = cs.table.load(std::memory_order_relaxed)->slots[Raw(id)].load(std::memory_order_relaxed)) {
      return rep;
    }
  } else {
    SpinGuard guard(cs.far_lock);
    auto it = cs.far->find(id);
    if (it != cs.far->end()) {
      BumpOwn(cs.far_lookups);
      return it->second;
    }
  }
  BumpOwn(cs.rep_misses);
  return nullptr;
}

}  // namespace detail

void InitCore() { SetThisCoreTable(&g_empty_table); }

}  // namespace fox::ebb
