// IrqSpinLock: a spinlock that also disables interrupts on this core while
// held, for data shared with interrupt handlers (STYLE.md §5). Holding it
// longer than a few microseconds delays every interrupt of the core.
#pragma once

#include "fox/spinlock.h"
#include "fox/thread_annotations.h"

namespace fox {

namespace irq {
// Disables interrupts on this core; returns whether they were enabled.
// Platform-provided (native: CLI; hosted: no interrupts, always false).
bool Save();
void Restore(bool enabled);
}  // namespace irq

class CAPABILITY("mutex") IrqSpinLock {
 public:
  constexpr IrqSpinLock() = default;
  // Returns the interrupt state to pass to Unlock.
  [[nodiscard]] bool Lock() ACQUIRE() {
    bool enabled = irq::Save();
    lock_.Lock();
    return enabled;
  }
  void Unlock(bool enabled) RELEASE() {
    lock_.Unlock();
    irq::Restore(enabled);
  }
  // Tells the thread-safety analysis that the caller holds the lock (a
  // callback that runs under it: a lambda is analysed on its own). No check.
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  SpinLock lock_;
};

class SCOPED_CAPABILITY IrqSpinGuard {
 public:
  explicit IrqSpinGuard(IrqSpinLock& lock) ACQUIRE(lock) : lock_(lock), enabled_(lock.Lock()) {}
  ~IrqSpinGuard() RELEASE() { lock_.Unlock(enabled_); }
  IrqSpinGuard(const IrqSpinGuard&) = delete;
  IrqSpinGuard& operator=(const IrqSpinGuard&) = delete;

 private:
  IrqSpinLock& lock_;
  bool enabled_;
};

}  // namespace fox
