#include "loop.h"

#include <cstddef>
#include <new>

#include "context.h"
#include "fox/clock.h"
#include "fox/log.h"
#include "fox/panic.h"
#include "fox/timer.h"
#include "platform.h"

namespace fox::event {
namespace {

constexpr size_t kStackBytes = 64 * 1024;  // event contexts' stacks
constexpr size_t kPoolMax = 16;            // idle stacks kept per core
constexpr size_t kRemoteBatch = 64;        // remote events taken per round

Loop* g_loops[core::kMaxCores];
std::atomic<const LoopHooks*> g_hooks{nullptr};
std::atomic<uint64_t> g_next_timer_id{1};

}  // namespace

// ---- MpscQueue (Vyukov) ----

void MpscQueue::Push(Node* n) {
  n->next.store(nullptr, std::memory_order_relaxed);
  Node* prev = head_.exchange(n, std::memory_order_acq_rel);
  prev->next.store(n, std::memory_order_release);
}

Node* MpscQueue::Pop() {
  Node* tail = tail_;
  Node* next = tail->next.load(std::memory_order_acquire);
  if (tail == &stub_) {
    if (next == nullptr) return nullptr;
    tail_ = next;
    tail = next;
    next = next->next.load(std::memory_order_acquire);
  }
  if (next != nullptr) {
    tail_ = next;
    return tail;
  }
  if (tail != head_.load(std::memory_order_acquire)) return nullptr;  // a push is in flight
  Push(&stub_);
  next = tail->next.load(std::memory_order_acquire);
  if (next != nullptr) {
    tail_ = next;
    return tail;
  }
  return nullptr;
}

bool MpscQueue::MaybeNonEmpty() const {
  return tail_ != &stub_ || tail_->next.load(std::memory_order_acquire) != nullptr;
}

// ---- Loop ----

Loop* ThisLoop() { return g_loops[core::Current()]; }
Loop* LoopOf(int core) { return core >= 0 && core < core::kMaxCores ? g_loops[core] : nullptr; }

Loop* CreateLoop(int core) {
  if (g_loops[core] == nullptr) g_loops[core] = new Loop(core);
  return g_loops[core];
}

void Loop::SpawnLocal(Task task) {
  if (local_head_ > 0 && local_head_ == local_.size()) {
    local_.clear();
    local_head_ = 0;
  }
  local_.push_back(std::move(task));
  ++local_events_;
}

void Loop::PushRemote(Node* node) {
  remote_.Push(node);
  remote_received.fetch_add(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleeping.load(std::memory_order_seq_cst)) {
    wakeups_sent.fetch_add(1, std::memory_order_relaxed);
    if (platform::Wake(core_)) wakeup_ipis.fetch_add(1, std::memory_order_relaxed);
  }
}

void Loop::Activate(Context* context, bool local) {
  auto* node = new Node;
  node->activate = context;
  if (local) {
    // Same core: still through the queue, so it runs after the current event.
    remote_.Push(node);
  } else {
    PushRemote(node);
  }
}

void Loop::Activate(Node* lent) { remote_.Push(lent); }

// ---- shared work (work stealing) ----

void Loop::PushShared(Node* node) {
  node->next.store(nullptr, std::memory_order_relaxed);
  {
    SpinGuard g(shared_lock_);
    if (shared_tail_ != nullptr)
      shared_tail_->next.store(node, std::memory_order_relaxed);
    else
      shared_head_ = node;
    shared_tail_ = node;
    shared_count_.fetch_add(1, std::memory_order_seq_cst);
  }
  shared_received.fetch_add(1, std::memory_order_relaxed);
  // As PushRemote: the work is published before `sleeping` is read, and a
  // core going to sleep publishes `sleeping` before it looks for work.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleeping.load(std::memory_order_seq_cst)) {
    wakeups_sent.fetch_add(1, std::memory_order_relaxed);
    if (platform::Wake(core_)) wakeup_ipis.fetch_add(1, std::memory_order_relaxed);
  } else {
    WakeThief();  // this core is busy: an idle one of its group may take it
  }
}

Node* Loop::TakeShared() {
  if (shared_count_.load(std::memory_order_acquire) == 0) return nullptr;
  Node* n;
  bool more;
  {
    SpinGuard g(shared_lock_);
    n = shared_head_;
    if (n == nullptr) return nullptr;
    shared_head_ = n->next.load(std::memory_order_relaxed);
    if (shared_head_ == nullptr) shared_tail_ = nullptr;
    more = shared_count_.fetch_sub(1, std::memory_order_seq_cst) > 1;
  }
  // Work is left here while this task runs: one more idle core of the
  // group joins in (each taker wakes the next: a cascade, not a herd).
  if (more) WakeThief();
  return n;
}

// Wakes one sleeping core of this core's steal group (the first after it).
// Its `sleeping` is cleared here, so that the next call picks another one
// rather than the same core again before it has woken.
void Loop::WakeThief() {
  int group = steal_group.load(std::memory_order_relaxed);
  if (group == 0) return;
  int n = core::Online();
  for (int i = 1; i < n; ++i) {
    Loop* l = g_loops[(core_ + i) % n];
    if (l == nullptr || l->steal_group.load(std::memory_order_relaxed) != group) continue;
    if (!l->sleeping.load(std::memory_order_seq_cst) || !l->sleeping.exchange(false, std::memory_order_seq_cst))
      continue;
    l->wakeups_sent.fetch_add(1, std::memory_order_relaxed);
    if (platform::Wake(l->core_)) l->wakeup_ipis.fetch_add(1, std::memory_order_relaxed);
    return;
  }
}

// Whether another core of this core's group has shared work queued.
bool Loop::StealableWork() const {
  int group = steal_group.load(std::memory_order_relaxed);
  if (group == 0) return false;
  int n = core::Online();
  for (int c = 0; c < n; ++c) {
    Loop* l = g_loops[c];
    if (l != nullptr && l != this && l->steal_group.load(std::memory_order_relaxed) == group && l->HasShared())
      return true;
  }
  return false;
}

// Runs a shared task taken from a queue (this core's or a victim's) here.
void Loop::RunTaken(Node* n) {
  Task task = std::move(n->task);
  delete n;
  event_local_ = nullptr;
  task();
}

// Runs one shared task of this core's own queue.
bool Loop::RunShared() {
  Node* n = TakeShared();
  if (n == nullptr) return false;
  RunTaken(n);
  return true;
}

// Takes one shared task from another core of the group (victims in turn,
// starting after the last one robbed) and runs it here.
bool Loop::Steal() {
  int group = steal_group.load(std::memory_order_relaxed);
  if (group == 0) return false;
  int n = core::Online();
  for (int i = 0; i < n; ++i) {
    int c = (next_victim_ + i) % n;
    Loop* l = g_loops[c];
    if (l == nullptr || l == this || l->steal_group.load(std::memory_order_relaxed) != group) continue;
    Node* node = l->TakeShared();
    if (node == nullptr) continue;
    next_victim_ = c;
    ++steals_;
    RunTaken(node);
    return true;
  }
  return false;
}

uint64_t Loop::AddIdle(Function<void()> handler) {
  idle_.emplace_back(next_idle_id_, std::move(handler));
  return next_idle_id_++;
}

void Loop::RemoveIdle(uint64_t id) {
  for (auto it = idle_.begin(); it != idle_.end(); ++it) {
    if (it->first == id) {
      // Keep the vector stable while an idle handler may be running: clear
      // the slot now, compact when no handler runs.
      it->second.Reset();
      return;
    }
  }
}

uint64_t Loop::AddTimer(uint64_t deadline_ns, uint64_t period_ns, Function<void()> callback) {
  uint64_t id = g_next_timer_id.fetch_add(1, std::memory_order_relaxed);
  Timer timer{id, period_ns, {}, {}};
  if (period_ns == 0)
    timer.callback = std::move(callback);
  else
    timer.callback_shared = std::make_shared<Function<void()>>(std::move(callback));
  auto it = timers_.emplace(deadline_ns, std::move(timer));
  timer_index_[id] = it;
  return id;
}

bool Loop::CancelTimer(uint64_t id) {
  auto found = timer_index_.find(id);
  if (found == timer_index_.end()) return false;
  timers_.erase(found->second);
  timer_index_.erase(found);
  return true;
}

uint64_t Loop::NextDeadline() const { return timers_.empty() ? 0 : timers_.begin()->first; }

// Due timers become ordinary local events, so a callback may block like any
// event; a periodic timer is re-armed before its callback runs.
bool Loop::RunTimers(uint64_t now) {
  bool ran = false;
  while (!timers_.empty() && timers_.begin()->first <= now) {
    auto it = timers_.begin();
    uint64_t deadline = it->first;
    Timer timer = std::move(it->second);
    timers_.erase(it);
    timer_index_.erase(timer.id);
    ++timers_fired_;
    ran = true;
    if (timer.period_ns == 0) {
      SpawnLocal(std::move(timer.callback));
      continue;
    }
    std::shared_ptr<Function<void()>> callback = timer.callback_shared;
    SpawnLocal([callback] { (*callback)(); });
    uint64_t next = deadline + timer.period_ns;
    if (next <= now) next += ((now - next) / timer.period_ns + 1) * timer.period_ns;  // skip missed periods
    uint64_t id = timer.id;
    auto again = timers_.emplace(next, std::move(timer));
    timer_index_[id] = again;
  }
  return ran;
}

void SetLoopHooks(const LoopHooks* hooks) { g_hooks.store(hooks, std::memory_order_release); }

void Loop::Sleep() {
  const LoopHooks* hooks = g_hooks.load(std::memory_order_acquire);
  if (hooks != nullptr) hooks->before_sleep();
  bool enabled = platform::DisableInterrupts();
  sleeping.store(true, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  uint64_t deadline = NextDeadline();
  bool can_sleep =
      !remote_.MaybeNonEmpty() && !HasShared() && !StealableWork() && (deadline == 0 || platform::HasTimerInterrupt());
  if (can_sleep && (deadline == 0 || deadline > clock::NowNs())) {
    ++sleeps_;
    platform::WaitForWork(deadline);
  }
  sleeping.store(false, std::memory_order_relaxed);
  platform::RestoreInterrupts(enabled);
  if (hooks != nullptr) hooks->after_wake();
}

Context* Loop::NewLoopContext() {
  Context* c;
  if (!pool_.empty()) {
    c = pool_.back();
    pool_.pop_back();
  } else {
    c = new Context;
    c->stack_bytes = kStackBytes;
    c->stack_top = platform::AllocStack(kStackBytes);
    c->core = core_;
    if (c->stack_top == 0) Panic("event: out of memory for an event stack on core %d", core_);
    ++stacks_;
  }
  c->sp = PrepareContext(c->stack_top, ContextEntry, this);
  return c;
}

void Loop::ReleaseAbandoned() {
  Context* c = abandoned_;
  if (c == nullptr) return;
  abandoned_ = nullptr;
  if (c->stack_top == 0) return;  // not ours (the boot stack): just dropped
  if (pool_.size() < kPoolMax) {
    pool_.push_back(c);
  } else {
    platform::FreeStack(c->stack_top, c->stack_bytes);
    delete c;
  }
}

void Loop::SwitchTo(Context* target) {
  Context* from = current_;
  current_ = target;
  fox_switch_context(&from->sp, target->sp);
  // Back on `from`: whoever switched to us may have left a context to recycle.
  ReleaseAbandoned();
}

void Loop::ContextEntry(void* arg) {
  auto* loop = static_cast<Loop*>(arg);
  loop->ReleaseAbandoned();
  loop->Loop_();
}

void Loop::Run() {
  boot_context_.core = core_;
  current_ = &boot_context_;
  Loop_();
}

// Every round re-reads the loop's state from members: an event that blocked
// and was resumed returns into an older Loop_ frame, which must carry on
// from the current state, not from its own stale locals.
void Loop::Loop_() {
  for (;;) {
    if (const LoopHooks* hooks = g_hooks.load(std::memory_order_acquire)) hooks->between_events();
    platform::PollWhileBusy();
    bool worked = RunTimers(clock::NowNs());
    // A bounded batch of local events, then remote ones: no queue starves.
    for (size_t budget = kRemoteBatch; budget > 0 && local_head_ < local_.size(); --budget) {
      Task task = std::move(local_[local_head_++]);
      event_local_ = nullptr;
      task();
      worked = true;
    }
    if (local_head_ == local_.size()) {
      local_.clear();
      local_head_ = 0;
    }
    for (size_t i = 0; i < kRemoteBatch; ++i) {
      Node* n = remote_.Pop();
      if (n == nullptr) break;
      worked = true;
      if (n->activate != nullptr) {
        Context* target = n->activate;
        if (!n->lent) delete n;
        ++resumes_;
        // Leave this loop context for the parked one; it is recycled once
        // we are running on the target.
        abandoned_ = current_;
        SwitchTo(target);
        // Only a fresh loop context (ContextEntry) ever runs after this
        // point for the abandoned one, never this frame: not reached.
        __builtin_unreachable();
      }
      event_local_ = nullptr;
      bool lent = n->lent;  // a lent node is its caller's once its event starts (Delegate)
      n->task();
      if (!lent) delete n;
    }
    // Shared tasks, a bounded batch; each is taken from the queue alone, so
    // idle cores of the group take the others meanwhile.
    for (size_t i = 0; i < kRemoteBatch && RunShared(); ++i) worked = true;
    if (worked || local_head_ < local_.size()) continue;
    if (Steal()) continue;
    bool compact = false;
    for (size_t i = 0; i < idle_.size(); ++i) {
      if (idle_[i].second)
        idle_[i].second();
      else
        compact = true;
    }
    if (compact) {
      std::erase_if(idle_, [](const auto& h) { return !h.second; });
    }
    if (!idle_.empty()) continue;  // polling cores do not sleep
    Sleep();
  }
}

void Loop::Block(Function<void(Continuation)> arm) {
  if (current_ == nullptr) Panic("event::Block outside the event loop");
  ++blocks_;
  Context* me = current_;
  Continuation k;
  Internal::Set(k, me, core_);
  arm(std::move(k));
  me->local = event_local_;
  // Go on running the loop on another context; we continue here when
  // someone activates `me`.
  SwitchTo(NewLoopContext());
  event_local_ = me->local;
}

Stats Loop::stats() const {
  return Stats{local_events_,
               remote_received.load(std::memory_order_relaxed),
               wakeups_sent.load(std::memory_order_relaxed),
               wakeup_ipis.load(std::memory_order_relaxed),
               sleeps_,
               blocks_,
               resumes_,
               timers_fired_,
               stacks_,
               shared_received.load(std::memory_order_relaxed),
               steals_};
}

namespace {
struct StackStart {
  Loop* loop;
  void (*entry)(void*);
  void* arg;
};
}  // namespace

void Loop::StackEntry(void* p) {
  StackStart start = *static_cast<StackStart*>(p);
  start.loop->ReleaseAbandoned();
  start.entry(start.arg);
  Panic("event: a context started by SpawnOnStack returned");
}

void SpawnOnStack(uintptr_t stack_top, void (*entry)(void*), void* arg) {
  Loop* loop = ThisLoop();
  // The context, its activation and its start at the top of its own stack,
  // which lives as long as the context: nothing is allocated, and nothing
  // freed when it starts (the boot's only heap frees before main were these).
  struct Top {
    Context context;
    Node activation;
    StackStart start;
  };
  uintptr_t at = (stack_top - sizeof(Top)) & ~uintptr_t{alignof(std::max_align_t) - 1};
  auto* top = new (reinterpret_cast<void*>(at)) Top{};
  top->context.core = loop->core();
  top->start = {loop, entry, arg};
  top->context.sp = PrepareContext(at, Loop::StackEntry, &top->start);
  top->activation.activate = &top->context;
  top->activation.lent = true;
  loop->Activate(&top->activation);
}

// ---- the public API ----

void Spawn(Task task) {
  Loop* loop = ThisLoop();
  if (loop == nullptr) Panic("event::Spawn before this core's loop exists");
  loop->SpawnLocal(std::move(task));
}

namespace {
// Core `core`'s loop; a core that is not online is the caller's bug.
Loop* OnlineLoop(int core, const char* caller) {
  Loop* loop = LoopOf(core);
  if (loop == nullptr) Panic("event::%s: core %d is not online", caller, core);
  return loop;
}

Node* NodeFor(Task task) {
  auto* n = new Node;
  n->task = std::move(task);
  return n;
}
}  // namespace

void SpawnRemote(int core, Task task) { OnlineLoop(core, "SpawnRemote")->PushRemote(NodeFor(std::move(task))); }

void DelegateErased(int core, void (*run)(void*), void* work) {
  if (core == core::Current()) return run(work);
  Loop* target = OnlineLoop(core, "Delegate");
  // Both queue nodes in this frame, which stays put until `resume` runs.
  struct Call {
    Node request, resume;
    void (*run)(void*);
    void* work;
    Loop* home;
  } call;
  call.run = run;
  call.work = work;
  call.home = ThisLoop();
  call.request.lent = call.resume.lent = true;
  call.request.task = [c = &call] {
    c->run(c->work);
    Loop* home = c->home;
    Node* resume = &c->resume;
    home->PushRemote(resume);  // `call` may be gone from here on
  };
  call.home->Block([&call, target](Continuation k) {
    call.resume.activate = static_cast<Context*>(Internal::Take(k));
    target->PushRemote(&call.request);
  });
}

void SpawnShared(int core, Task task) { OnlineLoop(core, "SpawnShared")->PushShared(NodeFor(std::move(task))); }

void SetStealGroup(int core, int group) {
  OnlineLoop(core, "SetStealGroup")->steal_group.store(group, std::memory_order_seq_cst);
}

InterruptTrigger::~InterruptTrigger() { delete static_cast<Node*>(armed_.exchange(nullptr)); }

void InterruptTrigger::Arm() {
  if (armed_.load(std::memory_order_relaxed) != nullptr) return;
  auto* node = new Node;
  node->task = [this] { task_(); };
  armed_.store(node, std::memory_order_release);
}

bool InterruptTrigger::Fire() {
  auto* node = static_cast<Node*>(armed_.exchange(nullptr, std::memory_order_acq_rel));
  if (node == nullptr) return false;
  Loop* loop = LoopOf(core_);
  if (loop == nullptr) Panic("event: InterruptTrigger fired at core %d, which is not online", core_);
  loop->PushRemote(node);
  return true;
}

uint64_t AddIdleHandler(Function<void()> handler) { return ThisLoop()->AddIdle(std::move(handler)); }
void RemoveIdleHandler(uint64_t id) { ThisLoop()->RemoveIdle(id); }

void Block(Function<void(Continuation)> arm) { ThisLoop()->Block(std::move(arm)); }

void*& Local() {
  Loop* loop = ThisLoop();
  if (loop == nullptr) Panic("event::Local outside the event loop");
  return loop->event_local();
}

bool InEvent() {
  Loop* loop = ThisLoop();
  return loop != nullptr && loop->running();
}

Stats GetStats(int core) {
  Loop* loop = LoopOf(core);
  return loop ? loop->stats() : Stats{};
}

Continuation& Continuation::operator=(Continuation&& o) noexcept {
  if (this != &o) {
    if (context_ != nullptr) Panic("event: a Continuation was overwritten without Resume (event lost)");
    context_ = o.context_;
    core_ = o.core_;
    o.context_ = nullptr;
  }
  return *this;
}

Continuation::~Continuation() {
  if (context_ != nullptr) LOG_ERROR("event: a blocked event on core %d was never resumed (its stack leaks)", core_);
}

void Continuation::Resume() {
  if (context_ == nullptr) Panic("event: Continuation resumed twice or empty");
  auto* c = static_cast<Context*>(context_);
  context_ = nullptr;
  Loop* loop = LoopOf(core_);
  loop->Activate(c, loop == ThisLoop());
}

}  // namespace fox::event

namespace fox::timer {

TimerId Start(uint64_t delay_ns, Function<void()> callback) {
  return event::ThisLoop()->AddTimer(clock::NowNs() + delay_ns, 0, std::move(callback));
}

TimerId StartPeriodic(uint64_t period_ns, Function<void()> callback) {
  if (period_ns == 0) Panic("timer::StartPeriodic with a zero period");
  return event::ThisLoop()->AddTimer(clock::NowNs() + period_ns, period_ns, std::move(callback));
}

bool Cancel(TimerId id) { return event::ThisLoop()->CancelTimer(id); }

void Sleep(uint64_t delay_ns) {
  event::Block([delay_ns](event::Continuation k) {
    auto resume = std::make_shared<event::Continuation>(std::move(k));
    Start(delay_ns, [resume] { resume->Resume(); });
  });
}

}  // namespace fox::timer
