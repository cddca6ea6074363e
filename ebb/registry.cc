// The node's registry of live Ebbs (see fox/ebb/registry.h for the contract
// and ebb/README.md for the locking rule).
//
// An Entry is created live by Publish, or in kConstructing by the first fault
// on a lazily created static Ebb; the faulting core then runs the root's
// constructor with no lock held while other faulting cores spin on the
// entry's state. That is what makes "exactly one root" hold when many cores
// first-touch at once. Representatives are built by the faulting core itself
// (one per core by construction) and installed under the entry lock, after
// checking that the Ebb is still live; Destroy marks the entry dead under the
// same lock, so a slot is either cleared by Destroy or never filled.
//
// Entries and everything they own are freed through quiescence.cc, so an
// Entry* a core found stays valid until that core's next quiescent point.
// Maps are std::map so that insertion and erasure move node handles built or
// destroyed outside the locks: nothing allocates under a SpinLock.
#include "fox/ebb/registry.h"

#include <bit>
#include <string>

#include "fox/ebb/errors.h"
#include "fox/ebb/lifetime.h"
#include "internal.h"

namespace fox::ebb::detail {
namespace {

using EntryMap = std::map<EbbId, Entry*>;

struct Registry {
  SpinLock lock;
  EntryMap entries GUARDED_BY(lock);
  uint64_t dead_static[(Raw(kFirstDynamicId) + 63) / 64] GUARDED_BY(lock) = {};  // by id
};

constinit std::atomic<Registry*> g_registry{nullptr};

// Allocated on first use rather than as a global with a constructor, so that
// static constructors elsewhere may create Ebbs.
Registry& GetRegistry() {
  Registry* registry = g_registry.load(std::memory_order_acquire);
  if (registry != nullptr) [[likely]]
    return *registry;
  auto fresh = std::make_unique<Registry>();
  if (g_registry.compare_exchange_strong(registry, fresh.get(), std::memory_order_acq_rel)) {
    return *fresh.release();
  }
  return *registry;
}

bool IsDeadStatic(const Registry& r, EbbId id) REQUIRES(r.lock) {
  return IsStaticId(id) && (r.dead_static[Raw(id) / 64] >> (Raw(id) % 64) & 1) != 0;
}

EntryMap::node_type MakeNode(EbbId id, Entry* entry) {
  EntryMap scratch;
  scratch.emplace(id, entry);
  return scratch.extract(scratch.begin());
}

[[noreturn]] void ThrowDead(EbbId id) {
  Bump(g_counters.dead_faults);
  throw DeadEbbError(id);
}

// Spins until a lazy construction ends; returns the new state.
State WaitWhileConstructing(const Entry* e) {
  State state;
  while ((state = e->state.load(std::memory_order_acquire)) == State::kConstructing) {
    __builtin_ia32_pause();
  }
  return state;
}

// The lazy root constructor threw: unpublish the entry so that the next
// fault retries, and free it once waiters have let go of it.
void AbandonConstruction(Entry* e) {
  Registry& r = GetRegistry();
  EntryMap::node_type node;
  {
    SpinGuard guard(r.lock);
    node = r.entries.extract(e->id);
    e->state.store(State::kFailed, std::memory_order_release);
  }
  Retire(e, nullptr, 0);
}

Found Find(EbbId id, const EbbType* type, bool may_create) {
  EnsureUsingReps(g_cores[ThisCoreIndex()]);
  Registry& r = GetRegistry();
  std::unique_ptr<Entry> fresh;  // allocated before the lock when we may create
  EntryMap::node_type node;
  for (;;) {
    Entry* e = nullptr;
    bool created = false;
    bool dead = false;
    {
      SpinGuard guard(r.lock);
      auto it = r.entries.find(id);
      if (it != r.entries.end()) {
        e = it->second;
      } else if (!may_create || type->make_root == nullptr || !IsStaticId(id) || IsDeadStatic(r, id)) {
        dead = true;
      } else if (fresh != nullptr) {
        fresh->constructing_core = ThisCoreIndex();
        e = fresh.release();
        r.entries.insert(std::move(node));
        created = true;
      }
    }
    if (dead) ThrowDead(id);
    if (e == nullptr) {
      fresh = std::make_unique<Entry>(id, type, State::kConstructing);
      node = MakeNode(id, fresh.get());
      continue;
    }
    if (e->type != type) throw EbbTypeError(id);
    if (created) {
      void* root;
      try {
        root = type->make_root();
      } catch (...) {
        AbandonConstruction(e);
        throw;
      }
      e->root = root;
      e->state.store(State::kLive, std::memory_order_release);
      Bump(g_counters.created);
      return {e, root};
    }
    if (e->state.load(std::memory_order_acquire) == State::kConstructing && e->constructing_core == ThisCoreIndex()) {
      throw EbbError(id, "fox::ebb: Ebb " + std::to_string(Raw(id)) + " dereferenced by its own root constructor");
    }
    switch (WaitWhileConstructing(e)) {
      case State::kLive: return {e, e->root};
      case State::kFailed: continue;  // its constructor threw; try (perhaps construct) again
      default: ThrowDead(id);
    }
  }
}

int SetBits(const uint64_t (&bits)[core::kMaxCores / 64]) {
  int n = 0;
  for (uint64_t word : bits) n += std::popcount(word);
  return n;
}

}  // namespace

Found FindForFault(EbbId id, const EbbType* type) { return Find(id, type, true); }

void* FindRoot(EbbId id, const EbbType* type) { return Find(id, type, false).root; }

void Install(Entry* e, void* rep) {
  CoreState& cs = AttachThisCore();
  int core = ThisCoreIndex();
  FarMap::node_type far_node;
  if (Raw(e->id) >= kDirectSlots) {
    FarMap scratch;
    scratch.emplace(e->id, rep);
    far_node = scratch.extract(scratch.begin());
  }
  bool live;
  {
    SpinGuard guard(e->lock);
    live = e->state.load(std::memory_order_relaxed) == State::kLive;
    if (live) {
      if (Raw(e->id) < kDirectSlots) {
        LocalTable* table = cs.table.load(std::memory_order_relaxed);
        table->slots[Raw(e->id)].store(rep, std::memory_order_relaxed);
      } else {
        SpinGuard far_guard(cs.far_lock);
        cs.far->insert(std::move(far_node));
      }
      e->installed[core / 64] |= uint64_t{1} << (core % 64);
    }
  }
  if (!live) ThrowDead(e->id);
  Bump(g_counters.reps_installed);
}

void Publish(EbbId id, const EbbType* type, void* root) {
  if (!IsStaticId(id) && !IsDynamicId(id)) {
    throw EbbError(id, "fox::ebb: " + std::to_string(Raw(id)) + " is not an Ebb id");
  }
  auto e = std::make_unique<Entry>(id, type, State::kLive);
  e->root = root;
  EntryMap::node_type node = MakeNode(id, e.get());
  Registry& r = GetRegistry();
  bool taken;
  {
    SpinGuard guard(r.lock);
    taken = r.entries.contains(id) || IsDeadStatic(r, id);
    if (!taken) r.entries.insert(std::move(node));
  }
  if (taken) throw EbbExistsError(id);
  e.release();
  Bump(g_counters.created);
}

size_t CollectReps(EbbId id, const EbbType* type, RepOnCore* out) {
  Entry* e = Find(id, type, false).entry;
  size_t n = 0;
  SpinGuard guard(e->lock);
  for (int core = 0; core < core::kMaxCores; ++core) {
    if ((e->installed[core / 64] >> (core % 64) & 1) == 0) continue;
    CoreState& cs = g_cores[core];
    void* rep = nullptr;
    if (Raw(id) < kDirectSlots) {
      rep = cs.table.load(std::memory_order_acquire)->slots[Raw(id)].load(std::memory_order_relaxed);
    } else {
      SpinGuard far_guard(cs.far_lock);
      rep = cs.far->at(id);
    }
    out[n++] = {core, rep};
  }
  return n;
}

}  // namespace fox::ebb::detail

namespace fox::ebb {

using namespace detail;

void Destroy(EbbId id) {
  Registry& r = GetRegistry();
  Entry* e = nullptr;
  EntryMap::node_type node;  // freed after the lock is dropped
  for (;;) {
    bool recursive = false;
    {
      SpinGuard guard(r.lock);
      auto it = r.entries.find(id);
      if (it == r.entries.end()) break;
      State state = it->second->state.load(std::memory_order_acquire);
      if (state == State::kLive) {
        e = it->second;
        {
          SpinGuard entry_guard(e->lock);
          e->state.store(State::kDead, std::memory_order_relaxed);
        }
        node = r.entries.extract(it);
        if (IsStaticId(id)) r.dead_static[Raw(id) / 64] |= uint64_t{1} << (Raw(id) % 64);
        break;
      }
      // kConstructing (kDead and kFailed entries are no longer in the map):
      // wait for the constructor, without holding on to the entry.
      recursive = it->second->constructing_core == ThisCoreIndex();
    }
    if (recursive) {
      throw EbbError(id, "fox::ebb: Ebb " + std::to_string(Raw(id)) + " destroyed by its own root constructor");
    }
    __builtin_ia32_pause();
  }
  if (e == nullptr) throw DeadEbbError(id);

  // Dead under the entry lock: no core installs anything from now on, so the
  // bitmap only shrinks and the arrays below are large enough.
  int installed;
  {
    SpinGuard guard(e->lock);
    installed = SetBits(e->installed);
  }
  bool multicore = e->type->kind == Kind::kMulticore;
  std::unique_ptr<void*[]> reps(multicore && installed > 0 ? new void*[installed] : nullptr);
  std::unique_ptr<FarMap::node_type[]> far_nodes(
      Raw(id) >= kDirectSlots && installed > 0 ? new FarMap::node_type[installed] : nullptr);
  size_t count = 0;
  {
    SpinGuard guard(e->lock);
    for (int core = 0; core < core::kMaxCores; ++core) {
      if ((e->installed[core / 64] >> (core % 64) & 1) == 0) continue;
      CoreState& cs = g_cores[core];
      void* rep;
      if (Raw(id) < kDirectSlots) {
        rep = cs.table.load(std::memory_order_acquire)->slots[Raw(id)].exchange(nullptr, std::memory_order_relaxed);
      } else {
        SpinGuard far_guard(cs.far_lock);
        far_nodes[count] = cs.far->extract(id);
        rep = far_nodes[count].mapped();
      }
      if (multicore) reps[count] = rep;
      ++count;
    }
    for (uint64_t& word : e->installed) word = 0;
  }
  Bump(g_counters.destroyed);
  Retire(e, std::move(reps), multicore ? count : 0);
}

}  // namespace fox::ebb
