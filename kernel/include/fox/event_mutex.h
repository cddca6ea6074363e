// EventMutex: a lock for events whose holder may allocate (STYLE.md §5 keeps
// allocation out of spinlocks: a holder in the heap would keep the others
// spinning for as long as the heap takes).
//
// Adaptive, as a futex-based mutex. A waiter first spins, for as long as
// kSpinNs, while the holder runs its section (the sections are meant to be
// short and never block); if the lock is still taken then, the waiting
// event blocks (event::Block) and the loop runs its core's other events. An
// Unlock that finds waiters frees the lock and wakes the first, which tries
// again (a spinner may take it first: no convoy behind a waiter that is
// slow to resume). So a waiter costs a switch only when a holder is held
// up (an interrupt, a host that descheduled the core's thread, a long
// section), and a core never spins for long. Outside an event (main before
// the loop, a non-fox thread) a waiter only spins.
//
// Nothing is allocated to wait (a blocked waiter's record is on its own
// stack); Unlock resumes a waiter (event::Continuation::Resume, which queues
// it: an allocation, never under the internal spinlock). Not for interrupt
// context; not inside an ebb::SharedRead (a waiter may block).
#pragma once

#include <atomic>
#include <cstdint>

#include "fox/event.h"
#include "fox/spinlock.h"
#include "fox/thread_annotations.h"

namespace fox {

class CAPABILITY("mutex") EventMutex {
 public:
  // How long a waiter spins before it blocks its event.
  static constexpr uint64_t kSpinNs = 20'000;

  constexpr EventMutex() = default;
  EventMutex(const EventMutex&) = delete;
  EventMutex& operator=(const EventMutex&) = delete;

  // How a waiter waits: kBlock as above; kSpin only spins, for a caller
  // that must not let its core's other events run before it holds the lock
  // (it then waits out the holder's section, however long).
  enum class Wait : uint8_t { kBlock, kSpin };

  void Lock(Wait wait = Wait::kBlock) ACQUIRE() {
    if (!TakeFree(kHeld)) LockSlow(wait);
  }
  bool TryLock() TRY_ACQUIRE(true) { return TakeFree(kHeld); }
  void Unlock() RELEASE() {
    uint32_t held = kHeld;
    if (!state_.compare_exchange_strong(held, kFree, std::memory_order_release, std::memory_order_relaxed)) {
      UnlockSlow();
    }
  }

  // Waits that blocked an event, since start (for tests and tuning).
  uint64_t blocked() const { return blocked_.load(std::memory_order_relaxed); }
  // Whether an event is queued for the lock now (for tests).
  bool has_waiters() const { return state_.load(std::memory_order_relaxed) == kHeldWaiters; }

 private:
  static constexpr uint32_t kFree = 0, kHeld = 1, kHeldWaiters = 2;
  struct Waiter {
    Waiter* next = nullptr;
    event::Continuation resume;
  };
  void LockSlow(Wait wait);
  bool Spin(uint32_t take_as);  // false after kSpinNs
  // Free -> take_as; false if it was not free.
  bool TakeFree(uint32_t take_as) {
    uint32_t free = kFree;
    return state_.compare_exchange_strong(free, take_as, std::memory_order_acquire, std::memory_order_relaxed);
  }
  void UnlockSlow();

  // kFree, kHeld, or kHeldWaiters (events may be queued: Unlock looks).
  std::atomic<uint32_t> state_{kFree};
  SpinLock waiters_lock_;  // the queue only; nothing allocated or resumed under it
  Waiter* head_ GUARDED_BY(waiters_lock_) = nullptr;
  Waiter* tail_ GUARDED_BY(waiters_lock_) = nullptr;
  std::atomic<uint64_t> blocked_{0};
};

// Holds an EventMutex for the lifetime of a scope.
class SCOPED_CAPABILITY EventMutexGuard {
 public:
  explicit EventMutexGuard(EventMutex& mutex, EventMutex::Wait wait = EventMutex::Wait::kBlock) ACQUIRE(mutex)
      : mutex_(mutex) {
    mutex_.Lock(wait);
  }
  ~EventMutexGuard() RELEASE() { mutex_.Unlock(); }
  EventMutexGuard(const EventMutexGuard&) = delete;
  EventMutexGuard& operator=(const EventMutexGuard&) = delete;

 private:
  EventMutex& mutex_;
};

}  // namespace fox
