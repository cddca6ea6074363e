// Wall-clock time from the CMOS real-time clock, read once at boot; after
// that CLOCK_REALTIME is this epoch plus the TSC clock.
#pragma once

#include <cstdint>

namespace fox::rtc {

// Boot step (after the TSC clock): reads the RTC.
void Init();
// Unix time in ns at NowNs() == 0.
uint64_t BootEpochNs();

}  // namespace fox::rtc
