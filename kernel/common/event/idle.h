// Idle, as both platforms wait (native: x86_64/event_platform.cc; hosted:
// linux/platform.cc): a per-core doorbell and the poll window.
//
// Doorbell. The sleeper announces itself (StartPolling, or Sleep with no
// poll) with an exchange that reports a ring already there; it goes from
// polling to sleeping by compare-and-swap (FallAsleep: fails if a ring came
// first); a waker exchanges kRung in (Ring) and sends the platform's
// wake-up (an IPI, an eventfd write) only if it found the owner asleep.
// Every transition is an exchange or a compare-and-swap, so each ring sees
// exactly one state. The loop calls the platform's Wake only for a core
// that set `sleeping` (its Dekker handshake, loop.cc).
//
// Poll window: how long an idle core polls for work before it sleeps, where
// sleeping and being woken are dear (an emulator's vCPU that halts and takes an IPI;
// a hosted thread in epoll_wait woken through an eventfd). The window adapts
// as Linux's guest haltpoll adapts its own: a sleep that ended within the
// most the core may poll (`max_ns`) would have been caught by a longer
// poll, so the window doubles (from kStartNs); a longer sleep halves it
// (below kStartNs: no poll at all). A busy core's brief idles end inside
// its poll, sparing its waker the wake-up; a core woken only by timers far
// apart soon stops polling. One per core, touched by its owner only.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace fox::event::platform {

struct alignas(64) Doorbell {  // alone in its cache line: MONITORed natively
  enum : uint32_t { kAwake, kPolling, kAsleep, kRung };
  std::atomic<uint32_t> state{kAwake};

  // The owner. False if a ring came first (the loop looks at its queues again).
  bool StartPolling() { return state.exchange(kPolling, std::memory_order_seq_cst) != kRung; }
  bool Sleep() { return state.exchange(kAsleep, std::memory_order_seq_cst) != kRung; }
  // Polling and nothing rung yet.
  bool Polling() const { return state.load(std::memory_order_seq_cst) == kPolling; }
  bool FallAsleep() {
    uint32_t polling = kPolling;
    return state.compare_exchange_strong(polling, kAsleep, std::memory_order_seq_cst);
  }
  // The owner stops waiting: a ring this overwrites was for a core that is
  // awake and about to look at its queues.
  void Done() { state.store(kAwake, std::memory_order_relaxed); }
  // A waker: true if the owner is asleep and needs the platform's wake-up.
  bool Ring() { return state.exchange(kRung, std::memory_order_seq_cst) == kAsleep; }
};
static_assert(sizeof(Doorbell) == 64);

struct alignas(64) PollWindow {
  static constexpr uint64_t kStartNs = 20000;
  uint64_t ns = kStartNs;

  // After a sleep of `slept_ns` that followed a poll of `ns`.
  void Adapt(uint64_t slept_ns, uint64_t max_ns) {
    if (slept_ns < max_ns) {
      ns = ns == 0 ? std::min(kStartNs, max_ns) : std::min(ns * 2, max_ns);
    } else {
      ns /= 2;
      if (ns < kStartNs) ns = 0;
    }
  }
};

}  // namespace fox::event::platform
