// The per-core event loop (see fox/event.h for the contract).
//
// Design. Each core owns a Loop: a local FIFO (this core only, no atomics),
// a multi-producer single-consumer queue for events from other cores
// (Vyukov's intrusive queue: producers do one atomic exchange), idle
// handlers, and a timer queue. The loop runs on a *context* (a stack). When
// an event blocks, its context is parked and the loop continues on a fresh
// context from a per-core pool; resuming pushes an activation onto the
// owning core's queue, and the loop switches to the parked context,
// abandoning the loop context it was on (which goes back to the pool once
// we are off it). Sleep: the core publishes `sleeping`, re-checks its
// queues and sleeps; senders publish work and then read `sleeping`, so one
// of the two always sees the other (both sides use seq_cst).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fox/core.h"
#include "fox/event.h"
#include "fox/function.h"
#include "fox/spinlock.h"

namespace fox::event {

struct Context {
  uintptr_t sp = 0;         // saved stack pointer while not running
  uintptr_t stack_top = 0;  // 0 for stacks the loop does not own (boot, main)
  size_t stack_bytes = 0;
  int core = -1;
  void* local = nullptr;  // the event's Local() while it is blocked
};

struct Node {
  std::atomic<Node*> next{nullptr};
  Task task;  // an event, or empty for an activation
  Context* activate = nullptr;
  // In a blocked caller's frame (Delegate): the loop neither frees it nor
  // touches it once its event started, after which the frame may be gone.
  bool lent = false;
};

class MpscQueue {
 public:
  MpscQueue() : head_(&stub_), tail_(&stub_) {}
  // Any core, any context.
  void Push(Node* n);
  // Owner only. nullptr when empty (or while a producer is mid-push; it
  // will complete and the owner sees it on a later call).
  Node* Pop();
  bool MaybeNonEmpty() const;

 private:
  std::atomic<Node*> head_;
  Node* tail_;
  Node stub_;
};

class Loop {
 public:
  explicit Loop(int core) : core_(core) {}

  // Starts the loop on the calling stack (which becomes this core's first
  // context). Never returns.
  [[noreturn]] void Run();

  void SpawnLocal(Task task);
  void PushRemote(Node* node);  // from any core
  void Activate(Context* context, bool local);
  void Activate(Node* lent);  // a lent node whose `activate` is set, from this core

  // Shared work (SpawnShared): queued here, taken by this core or by an idle
  // core of the same steal group. Take is callable from any core.
  void PushShared(Node* node);
  Node* TakeShared();
  bool HasShared() const { return shared_count_.load(std::memory_order_seq_cst) != 0; }
  std::atomic<int> steal_group{0};

  uint64_t AddIdle(Function<void()> handler);
  void RemoveIdle(uint64_t id);
  uint64_t AddTimer(uint64_t deadline_ns, uint64_t period_ns, Function<void()> callback);
  bool CancelTimer(uint64_t id);

  void Block(Function<void(Continuation)> arm);
  bool running() const { return current_ != nullptr; }
  void*& event_local() { return event_local_; }
  int core() const { return core_; }
  Stats stats() const;

  // Statistics updated by other cores.
  std::atomic<uint64_t> remote_received{0};
  std::atomic<uint64_t> wakeups_sent{0};
  std::atomic<uint64_t> wakeup_ipis{0};
  std::atomic<uint64_t> shared_received{0};

 private:
  struct Timer {
    uint64_t id;
    uint64_t period_ns;
    Function<void()> callback;                          // one-shot
    std::shared_ptr<Function<void()>> callback_shared;  // periodic
  };

  [[noreturn]] void Loop_();
  static void ContextEntry(void* loop);

 public:
  static void StackEntry(void* start);

 private:
  bool RunTimers(uint64_t now);
  uint64_t NextDeadline() const;
  void Sleep();
  bool RunShared();
  void RunTaken(Node* n);
  bool Steal();
  bool StealableWork() const;
  void WakeThief();
  Context* NewLoopContext();
  void SwitchTo(Context* target);
  void ReleaseAbandoned();

  const int core_;
  std::vector<Task> local_;  // FIFO as a ring over a vector
  size_t local_head_ = 0;
  MpscQueue remote_;
  SpinLock shared_lock_;
  Node* shared_head_ GUARDED_BY(shared_lock_) = nullptr;  // FIFO through Node::next
  Node* shared_tail_ GUARDED_BY(shared_lock_) = nullptr;
  std::atomic<size_t> shared_count_{0};  // shared_.size(), readable without the lock
  int next_victim_ = 0;
  std::vector<std::pair<uint64_t, Function<void()>>> idle_;
  uint64_t next_idle_id_ = 1;
  std::multimap<uint64_t, Timer> timers_;  // by deadline
  std::unordered_map<uint64_t, std::multimap<uint64_t, Timer>::iterator> timer_index_;
  Context* current_ = nullptr;
  void* event_local_ = nullptr;   // event::Local() of the running event
  Context* abandoned_ = nullptr;  // loop context to recycle once we are off it
  std::vector<Context*> pool_;
  Context boot_context_;

 public:
  std::atomic<bool> sleeping{false};

 private:
  uint64_t steals_ = 0;
  uint64_t local_events_ = 0, sleeps_ = 0, blocks_ = 0, resumes_ = 0, timers_fired_ = 0, stacks_ = 0;
};

// Access to Continuation's internals for the loop.
struct Internal {
  static void Set(Continuation& k, void* context, int core) {
    k.context_ = context;
    k.core_ = core;
  }
  // The suspended context, which `k` no longer resumes.
  static void* Take(Continuation& k) {
    void* context = k.context_;
    k.context_ = nullptr;
    return context;
  }
};

// The loop of the calling core (nullptr before the core started its loop).
Loop* ThisLoop();
Loop* LoopOf(int core);
// Platform start-up: creates the Loop object for `core` (before Run).
Loop* CreateLoop(int core);

// Spawns `main_entry(arg)` as the first event of this core on a context
// whose stack ends at `stack_top` (the application's main stack).
void SpawnOnStack(uintptr_t stack_top, void (*main_entry)(void*), void* arg);

}  // namespace fox::event
