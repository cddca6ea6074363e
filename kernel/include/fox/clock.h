// Monotonic time. Native: the TSC, calibrated at boot; hosted: CLOCK_MONOTONIC.
#pragma once

#include <cstdint>

namespace fox::clock {

// Nanoseconds since boot (native) or since an arbitrary epoch (hosted).
// Monotonic per core and consistent across cores on CPUs with an invariant
// TSC. Safe in any context; 0 before the clock is initialised.
uint64_t NowNs();

}  // namespace fox::clock
