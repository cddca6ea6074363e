// How long an idle core polls for work before it sleeps, where sleeping
// and being woken are dear (an emulator's vCPU that halts and takes an IPI;
// a hosted thread in epoll_wait woken through an eventfd). The window adapts
// as Linux's guest haltpoll adapts its own: a sleep that ended within the
// most the core may poll (`max_ns`) would have been caught by a longer
// poll, so the window doubles (from kStartNs); a longer sleep halves it
// (below kStartNs: no poll at all). A busy core's brief idles end inside
// its poll, sparing its waker the wake-up; a core woken only by timers far
// apart soon stops polling. One per core, touched by its owner only.
#pragma once

#include <algorithm>
#include <cstdint>

namespace fox::event::platform {

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
