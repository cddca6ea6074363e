// The per-core event loop (EbbRT's execution model; DESIGN.md "Cores,
// memory, events").
//
// Every core runs one non-preemptive loop. An event is a Function<void()>
// that runs to completion on the core it was spawned on. An event may block
// (event::Block): its stack is kept and the loop goes on on another stack
// until someone resumes it. Nothing here may be called from interrupt
// context unless its comment says so.
#pragma once

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "fox/function.h"

namespace fox::event {

using Task = Function<void()>;

// Runs `task` later on the calling core, after the events spawned before it
// (FIFO). Allocates nothing for small tasks beyond the queue slot.
void Spawn(Task task);

// Runs `task` on core `core` (any online core, including the caller's).
// Lock-free: the target's queue takes the task with one atomic exchange; an
// IPI is sent only if the target is asleep. Allocates the queue node.
void SpawnRemote(int core, Task task);

// Work that any core of a steal group may run (work stealing; DESIGN.md
// "Cores, memory, events"): `task` is queued at core `core`, which runs it
// after its other events (each taken from the queue alone); meanwhile an idle core
// of the same steal group takes it from there. A sleeping member of the group
// is woken when `core` is busy. For independent work a runtime spreads over
// cores (APGAS activities). A task runs exactly once, on one core, to
// completion or until it blocks (it then resumes on the core that took it).
// Event context (it takes a spin lock), any core; allocates the queue slot.
void SpawnShared(int core, Task task);

// Puts core `core` into steal group `group` (0, the default: none). A core of
// a group takes shared work queued at other cores of its group when it has
// none of its own; cores outside every group only run their own. Any core,
// at any time (a core that leaves keeps running its own queue).
void SetStealGroup(int core, int group);

// Adds a callback the loop runs whenever it has no events: for polling
// devices. A core with idle handlers never sleeps. Returns an id for
// RemoveIdleHandler. This core only.
uint64_t AddIdleHandler(Function<void()> handler);
void RemoveIdleHandler(uint64_t id);

// A suspended event. Resume() makes it continue on its own core as a new
// event; it must be called exactly once (a Continuation destroyed without
// Resume leaks the suspended stack, which is reported).
class Continuation {
 public:
  Continuation() = default;
  Continuation(Continuation&& o) noexcept : context_(o.context_), core_(o.core_) { o.context_ = nullptr; }
  Continuation& operator=(Continuation&& o) noexcept;
  Continuation(const Continuation&) = delete;
  Continuation& operator=(const Continuation&) = delete;
  ~Continuation();

  // Any core, any event; not from interrupt context.
  void Resume();
  explicit operator bool() const { return context_ != nullptr; }

 private:
  friend struct Internal;
  void* context_ = nullptr;
  int core_ = -1;
};

// Suspends the calling event: `arm` runs at once (on this stack) with the
// Continuation that will resume it; the loop then runs other events. Returns
// when the Continuation is resumed. Only from an event (or main).
void Block(Function<void(Continuation)> arm);

// A word that belongs to the running event: null when each event starts,
// kept while the event is blocked and restored when it resumes, whatever ran
// on the core meanwhile. For runtimes above the loop (the APGAS activity an
// event runs). Event context only.
void*& Local();

// True when called from an event of a running loop (where Block may be used).
bool InEvent();

// Runs `work()` on core `core` and returns once it has returned: inline if
// the caller is on `core`, else as an event there while the calling event
// is blocked, so that `work` may use the caller's frame (its arguments, its
// answer). Nothing is allocated: the event and the caller's resumption are
// queued from this frame (a blocking delegate: Grappa's `delegate::call`).
// `work` may block; it must not throw. Event context (or main).
void DelegateErased(int core, void (*run)(void*), void* work);
template <class F>
void Delegate(int core, F&& work) {
  DelegateErased(
      core, [](void* w) { (*static_cast<std::remove_reference_t<F>*>(w))(); }, &work);
}

// Lets an interrupt handler start an event without allocating: Arm()
// (event context; allocates the queue node) prepares one run of `task` on
// `core`; Fire() (any context, interrupt level included: one atomic exchange
// and the lock-free queue push) posts it if armed and returns whether it did.
// Re-arm, typically first thing in the task, to be fired again. The trigger
// must outlive any armed or posted run.
class InterruptTrigger {
 public:
  InterruptTrigger(int core, Function<void()> task) : core_(core), task_(std::move(task)) {}
  InterruptTrigger(const InterruptTrigger&) = delete;
  InterruptTrigger& operator=(const InterruptTrigger&) = delete;
  ~InterruptTrigger();

  void Arm();
  bool Fire();

 private:
  int core_;
  Function<void()> task_;
  std::atomic<void*> armed_{nullptr};
};

// Hooks for layers above (the Ebb model's quiescent-state reclamation): the
// loop calls `between_events` between rounds of events, `before_sleep` before
// the core sleeps and `after_wake` when it wakes. Set once at start-up.
struct LoopHooks {
  void (*between_events)();
  void (*before_sleep)();
  void (*after_wake)();
};
void SetLoopHooks(const LoopHooks* hooks);

// Counters for this node, per core (STYLE.md §12).
struct Stats {
  uint64_t local_events;   // Spawn
  uint64_t remote_events;  // SpawnRemote received
  uint64_t wakeups_sent;   // wake-ups sent to this core while it slept (or was about to)
  uint64_t wakeup_ipis;    // of those, IPIs; the rest rang its doorbell (MWAIT) or a host eventfd
  uint64_t sleeps;         // times the core went to sleep
  uint64_t blocks;         // Block calls
  uint64_t resumes;
  uint64_t timers_fired;
  uint64_t stacks_allocated;
  uint64_t shared_events;  // SpawnShared queued here
  uint64_t steals;         // shared tasks this core took from other cores
};
Stats GetStats(int core);

}  // namespace fox::event
