// Deferred freeing of destroyed Ebbs: quiescent-state-based reclamation.
//
// A global epoch counts retirements. Each core publishes, at every
// quiescent point, the epoch it saw (quiescent_epoch), or 0 while it uses no
// representatives (before its first miss, and in EnterQuiescence). Retiring
// an entry (after Destroy has cleared every slot that points into it) bumps
// the epoch to E and queues the entry with E; it is freed once every core's
// published epoch is 0 or >= E, that is, once every core that might have
// read one of those slots before they were cleared has since announced that
// it holds nothing.
//
// Ordering. A quiescent point loads the epoch with acquire and publishes it
// with release: the core's earlier uses of reps happen before the
// reclaimer's acquire load of the published value, and its later slot loads
// happen after the slot clears that precede the bump. A core leaving
// quiescence stores its epoch and then fences before touching any slot; a
// reclaimer clears slots, bumps (a seq_cst read-modify-write) and fences
// before scanning; so either the reclaimer sees the core as using reps, or
// the core sees the cleared slots.
#include "fox/ebb/lifetime.h"
#include "internal.h"

namespace fox::ebb {
namespace detail {
namespace {

struct Retired {
  uint64_t epoch;
  Entry* entry;
  std::unique_ptr<void*[]> reps;
  size_t rep_count;
  Retired* next;
};

constinit std::atomic<uint64_t> g_epoch{1};
constinit SpinLock g_retire_lock;
constinit Retired* g_retire_head GUARDED_BY(g_retire_lock) = nullptr;
constinit Retired** g_retire_tail GUARDED_BY(g_retire_lock) = &g_retire_head;

void Free(Retired* r) {
  const EbbType* type = r->entry->type;
  for (size_t i = 0; i < r->rep_count; ++i) type->delete_rep(r->reps[i]);
  if (r->entry->root != nullptr) type->delete_root(r->entry->root);
  delete r->entry;
  delete r;
}

// Frees every retired entry all cores are done with. Destructors run here,
// with no lock held.
void Reclaim() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  uint64_t safe = UINT64_MAX;
  for (CoreState& cs : g_cores) {
    uint64_t seen = cs.quiescent_epoch.load(std::memory_order_acquire);
    if (seen != 0 && seen < safe) safe = seen;
  }
  Retired* done = nullptr;
  {
    SpinGuard guard(g_retire_lock);
    Retired** link = &g_retire_head;
    while (*link != nullptr && (*link)->epoch <= safe) link = &(*link)->next;
    if (link != &g_retire_head) {
      done = g_retire_head;
      g_retire_head = *link;
      *link = nullptr;
      if (g_retire_head == nullptr) g_retire_tail = &g_retire_head;
    }
  }
  while (done != nullptr) {
    Retired* next = done->next;
    Free(done);
    g_counters.retired_pending.fetch_sub(1, std::memory_order_relaxed);
    Bump(g_counters.reclaimed);
    done = next;
  }
}

}  // namespace

void EnsureUsingReps(CoreState& cs) {
  if (cs.quiescent_epoch.load(std::memory_order_relaxed) != 0) return;
  cs.quiescent_epoch.store(g_epoch.load(std::memory_order_seq_cst), std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void Retire(Entry* entry, std::unique_ptr<void*[]> reps, size_t count) {
  auto* r = new Retired{0, entry, std::move(reps), count, nullptr};
  {
    SpinGuard guard(g_retire_lock);
    // Bumped under the lock so that the list stays sorted by epoch.
    r->epoch = g_epoch.fetch_add(1, std::memory_order_seq_cst) + 1;
    *g_retire_tail = r;
    g_retire_tail = &r->next;
  }
  Bump(g_counters.retired_pending);
  Reclaim();  // whatever is already safe (everything, when no core uses reps)
}

}  // namespace detail

using namespace detail;

void QuiescentPoint() {
  int core = ThisCoreIndex();
  CoreState& cs = g_cores[core];
  if (cs.quiescent_epoch.load(std::memory_order_relaxed) != 0) {
    cs.quiescent_epoch.store(g_epoch.load(std::memory_order_acquire), std::memory_order_release);
  }
  if (g_counters.retired_pending.load(std::memory_order_relaxed) != 0) Reclaim();
  RetiredAtQuiescentPoint(core);
}

void EnterQuiescence() { g_cores[ThisCoreIndex()].quiescent_epoch.store(0, std::memory_order_release); }

void ExitQuiescence() {
  CoreState& cs = g_cores[ThisCoreIndex()];
  // Only cores that have used reps come back; others stay quiescent until
  // their first miss.
  if (cs.table.load(std::memory_order_relaxed) != nullptr) EnsureUsingReps(cs);
}

}  // namespace fox::ebb
