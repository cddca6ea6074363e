// clock_gettime for the C library, served from the TSC without a system
// call. CLOCK_REALTIME (0) and CLOCK_REALTIME_COARSE (5) add the wall-clock
// epoch read from the RTC at boot; every other clock is time since boot.
#include <cerrno>
#include <cstdint>

#include "fox/clock.h"
#include "rtc.h"

extern "C" {

struct timespec_fox {
  int64_t tv_sec;
  int64_t tv_nsec;
};

int __clock_gettime(int clock, timespec_fox* ts) {
  if (clock < 0 || clock > 11) {
    errno = EINVAL;
    return -1;
  }
  uint64_t ns = fox::clock::NowNs();
  if (clock == 0 || clock == 5) ns += fox::rtc::BootEpochNs();
  ts->tv_sec = int64_t(ns / 1000000000);
  ts->tv_nsec = int64_t(ns % 1000000000);
  return 0;
}
}

extern "C" int clock_gettime(int clock, timespec_fox* ts) __attribute__((alias("__clock_gettime")));
