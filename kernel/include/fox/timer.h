// Timers on the per-core event loop. Kernel cores sleep until their next
// timer (the APIC timer wakes them); application cores have no timer
// interrupt, so they poll their timers and do not sleep while one is armed.
// Callbacks run as events on the core that started the timer.
#pragma once

#include <cstdint>

#include "fox/function.h"

namespace fox::timer {

using TimerId = uint64_t;

// Runs `callback` once, `delay_ns` from now, on this core.
TimerId Start(uint64_t delay_ns, Function<void()> callback);
// Runs `callback` every `period_ns` (> 0), first after one period. Missed
// periods are skipped, not replayed.
TimerId StartPeriodic(uint64_t period_ns, Function<void()> callback);
// Suspends the calling event for `delay_ns` (at least): the core runs other
// events meanwhile, on both platforms (hosted, std::this_thread::sleep_for
// would stop the whole core). Event context only.
void Sleep(uint64_t delay_ns);
// Stops a timer of this core; false if it already fired (one-shot) or is
// unknown. Safe to call from the timer's own callback.
bool Cancel(TimerId id);

}  // namespace fox::timer
