// Spinlocks (STYLE.md §5).
//
// SpinLock: a test-and-test-and-set lock for data never touched from
// interrupt context. It does not change the interrupt flag: taking one that an
// interrupt handler also takes would deadlock. Locks with interrupts saved come
// with the per-core event loop (IrqSpinLock). Allocate before taking a lock.
#pragma once

#include <atomic>

#include "fox/thread_annotations.h"

namespace fox {

class CAPABILITY("mutex") SpinLock {
 public:
  constexpr SpinLock() = default;
  SpinLock(const SpinLock&) = delete;
  SpinLock& operator=(const SpinLock&) = delete;

  void Lock() ACQUIRE() {
    for (;;) {
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      while (locked_.load(std::memory_order_relaxed)) __builtin_ia32_pause();
    }
  }
  bool TryLock() TRY_ACQUIRE(true) {
    return !locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire);
  }
  void Unlock() RELEASE() { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

// Holds a SpinLock for the lifetime of a scope.
class SCOPED_CAPABILITY SpinGuard {
 public:
  explicit SpinGuard(SpinLock& lock) ACQUIRE(lock) : lock_(lock) { lock_.Lock(); }
  ~SpinGuard() RELEASE() { lock_.Unlock(); }
  SpinGuard(const SpinGuard&) = delete;
  SpinGuard& operator=(const SpinGuard&) = delete;

 private:
  SpinLock& lock_;
};

}  // namespace fox
