// Wall-clock time from the CMOS real-time clock, read once at boot; after
// that CLOCK_REALTIME is this epoch plus the TSC clock.
#pragma once

#include <cstdint>

#include "fox/result.h"

namespace fox::rtc {

// Boot step (after the TSC clock): reads the RTC.
void Init();
// Unix time in ns at NowNs() == 0.
uint64_t BootEpochNs();

// Makes the RTC raise IRQ 8 periodically (`rate` 3..15: 32768 >> (rate-1)
// Hz, e.g. 6 = 1024 Hz), delivered to core 0: steady device interrupts for
// tests of core roles. Returns the number taken so far via Ticks().
Result<void> StartPeriodicInterrupt(int rate);
void StopPeriodicInterrupt();
uint64_t Ticks();

}  // namespace fox::rtc
