// State shared by the ebb/ sources; not part of the public API.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>

#include "fox/core.h"
#include "fox/ebb/local_table.h"
#include "fox/ebb/registry.h"
#include "fox/spinlock.h"
#include "fox/thread_annotations.h"

// Invariant checks (STYLE §4): a broken invariant stops the program.
#define FOX_EBB_CHECK(cond)        \
  do {                             \
    if (!(cond)) __builtin_trap(); \
  } while (0)

namespace fox::ebb::detail {

using FarMap = std::map<EbbId, void*>;

// Everything ebb/ keeps per core. Only the owning core writes `table` (once),
// its counters and, outside quiescence.cc's rules, `quiescent_epoch`; other
// cores read them, and Destroy clears slots and far entries under the entry
// lock.
struct alignas(64) CoreState {
  std::atomic<LocalTable*> table{nullptr};   // this core's table, from its first miss
  std::atomic<uint64_t> quiescent_epoch{0};  // quiescence.cc; 0: not using reps
  std::atomic<uint64_t> rep_misses{0};
  std::atomic<uint64_t> far_lookups{0};
  SpinLock far_lock;
  FarMap* far PT_GUARDED_BY(far_lock) = nullptr;  // ids >= kDirectSlots
};
extern CoreState g_cores[core::kMaxCores];

enum class State : uint8_t {
  kConstructing,  // a core is running the lazy root constructor
  kLive,
  kDead,    // destroyed; waiting for reclamation
  kFailed,  // the lazy root constructor threw; waiting for reclamation
};

struct Entry {
  Entry(EbbId entry_id, const EbbType* entry_type, State initial) : id(entry_id), type(entry_type), state(initial) {}

  const EbbId id;
  const EbbType* const type;
  std::atomic<State> state;
  void* root = nullptr;        // written before state becomes kLive, then constant
  int constructing_core = -1;  // kConstructing: who runs the constructor
  SpinLock lock;
  uint64_t installed[core::kMaxCores / 64] GUARDED_BY(lock) = {};  // cores with a slot
};

struct Counters {
  std::atomic<uint64_t> created{0};
  std::atomic<uint64_t> destroyed{0};
  std::atomic<uint64_t> reps_installed{0};
  std::atomic<uint64_t> dead_faults{0};
  std::atomic<uint64_t> retired_pending{0};
  std::atomic<uint64_t> reclaimed{0};
  std::atomic<int> tables{0};
};
extern Counters g_counters;

// Counter of the calling core: single writer, so no read-modify-write.
inline void BumpOwn(std::atomic<uint64_t>& counter) {
  counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}
inline void Bump(std::atomic<uint64_t>& counter) { counter.fetch_add(1, std::memory_order_relaxed); }

// core::Current(), checked against kMaxCores.
int ThisCoreIndex();

// The calling core's state with its table allocated and bound to the
// platform hook, and the core marked as using reps. Thread context;
// allocates on the core's first call (throws std::bad_alloc).
CoreState& AttachThisCore();

// quiescence.cc: marks `cs` (the calling core's) as using reps if it is not
// (ExitQuiescence), with the fence that orders this against a concurrent
// reclaimer's scan.
void EnsureUsingReps(CoreState& cs);

// quiescence.cc: frees `entry` and its `count` reps (in `reps`), after every
// core has passed a quiescent point. The entry is unpublished already.
void Retire(Entry* entry, std::unique_ptr<void*[]> reps, size_t count);

// retire.cc: seals and frees what the calling core (`core`) gave
// RetireLater, as far as the reads in progress allow (QuiescentPoint).
void RetiredAtQuiescentPoint(int core);
// The same before the core sleeps: everything open is sealed first.
void RetiredBeforeSleep();

// id_allocator.cc: ids handed out by the default allocator (AllocateId).
uint64_t DefaultIdsAllocated();

}  // namespace fox::ebb::detail
