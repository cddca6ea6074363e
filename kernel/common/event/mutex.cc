// EventMutex (fox/event_mutex.h).
#include <utility>

#include "fox/clock.h"
#include "fox/event_mutex.h"
#include "fox/thread_annotations.h"

namespace fox {

bool EventMutex::Spin(uint32_t take_as) {
  uint64_t start = 0;
  for (uint32_t spins = 1;; ++spins) {
    uint32_t state = state_.load(std::memory_order_relaxed);
    if (state == kFree && TakeFree(take_as)) return true;
    __builtin_ia32_pause();
    if (spins % 64 == 0) {  // the clock only now and then (dear under an emulator)
      uint64_t now = clock::NowNs();
      if (start == 0) {
        start = now;
      } else if (now - start > kSpinNs) {
        return false;
      }
    }
  }
}

void EventMutex::LockSlow(Wait wait) NO_THREAD_SAFETY_ANALYSIS {  // takes it by TakeFree
  if (wait == Wait::kSpin || !event::InEvent()) {                 // spin on (nothing to block)
    while (!(state_.load(std::memory_order_relaxed) == kFree && TakeFree(kHeld))) __builtin_ia32_pause();
    return;
  }
  // Until it first waits, it takes the lock as unmarked; once woken, as
  // marked: others may still wait, and its Unlock must wake the next.
  for (uint32_t take_as = kHeld;; take_as = kHeldWaiters) {
    if (Spin(take_as)) return;
    Waiter self;
    bool queued = false;
    event::Block([&](event::Continuation resume) {
      {
        SpinGuard g(waiters_lock_);
        // Marks the waiters first: an Unlock from now on wakes one (and
        // looks under this lock, so after this waiter is queued). Freed
        // meanwhile: not taken here (a suspended holder would stop this
        // core's next event that spins for it), but tried again at once.
        for (uint32_t state = state_.load(std::memory_order_relaxed); state != kFree;) {
          if (state == kHeldWaiters || state_.compare_exchange_weak(state, kHeldWaiters, std::memory_order_relaxed)) {
            self.resume = std::move(resume);
            (tail_ != nullptr ? tail_->next : head_) = &self;
            tail_ = &self;
            queued = true;
            break;
          }
        }
      }
      if (!queued) resume.Resume();
    });
    if (!queued) continue;
    blocked_.fetch_add(1, std::memory_order_relaxed);
    // Woken by an Unlock, which freed it: try again (one that spun
    // meanwhile may have it; this one then waits again, marking it).
  }
}

void EventMutex::UnlockSlow() {
  // Marked: free it, then wake the first waiter, which tries again.
  state_.store(kFree, std::memory_order_release);
  event::Continuation next;
  {
    SpinGuard g(waiters_lock_);
    Waiter* first = head_;
    if (first == nullptr) return;
    head_ = first->next;
    if (head_ == nullptr) tail_ = nullptr;
    next = std::move(first->resume);  // `first` is on the waiter's stack: not touched after this
  }
  next.Resume();
}

}  // namespace fox
