// Once: a set-up that runs exactly once, on whichever core asks for it first;
// a core that asks meanwhile waits, spinning, until it has run (for set-ups
// of at most milliseconds: a device's start, a clock's first reading). The
// set-up runs with no lock held, so it may allocate (STYLE.md 5). Event or
// thread context, never an interrupt handler (it may spin on its own core's
// unfinished set-up).
#pragma once

#include <atomic>

namespace fox {

class Once {
 public:
  constexpr Once() = default;
  Once(const Once&) = delete;
  Once& operator=(const Once&) = delete;

  // Runs `setup` if nobody has; returns once it has run (here or on another
  // core), with what it wrote visible.
  template <typename F>
  void Run(F&& setup) {
    if (state_.load(std::memory_order_acquire) == kDone) return;
    int expected = kIdle;
    if (state_.compare_exchange_strong(expected, kRunning, std::memory_order_acq_rel)) {
      setup();
      state_.store(kDone, std::memory_order_release);
      return;
    }
    while (state_.load(std::memory_order_acquire) != kDone) __builtin_ia32_pause();
  }

 private:
  enum : int { kIdle, kRunning, kDone };
  std::atomic<int> state_{kIdle};
};

}  // namespace fox
