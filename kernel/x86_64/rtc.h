// Wall-clock time from the CMOS real-time clock, read once, when the wall
// clock is first asked for (a node that never asks never reads it); after
// that CLOCK_REALTIME is this epoch plus the TSC clock.
#pragma once

#include <cstdint>

#include "fox/result.h"
#include "interrupts.h"

namespace fox::rtc {

// Unix time in ns at NowNs() == 0 (0 if the RTC's date is implausible).
// The first call reads the RTC (~0.1 ms; up to 2 ms more if an update is
// in progress); any core, after the TSC clock is calibrated.
uint64_t BootEpochNs();

// Makes the RTC raise IRQ 8 periodically (`rate` 3..15: 32768 >> (rate-1)
// Hz, e.g. 6 = 1024 Hz), delivered to core 0: steady device interrupts for
// tests of core roles. Returns the number taken so far via Ticks().
// kBusy while it runs already (Stop first).
Result<void> StartPeriodicInterrupt(int rate);
void StopPeriodicInterrupt();
uint64_t Ticks();
// Called with the interrupted frame on every periodic interrupt (interrupt
// context, core 0); nullptr: none. The profiler's (profile.h).
void SetTickHook(void (*hook)(interrupts::Frame* frame));

}  // namespace fox::rtc
