// A sampling profiler for compute nodes (fox.profile=HZ): where the kernel
// cores spend their time, by function, printed when the program exits.
//
// The RTC's periodic interrupt (HZ times a second, a power of two from 2 to
// 8192) samples core 0's instruction pointer and sends every other kernel
// core an IPI that samples its own; application cores are never
// interrupted, so they are not sampled. Each core keeps its first
// kMaxSamples samples. While it runs, the RTC's periodic interrupt is the
// profiler's (rtc::StartPeriodicInterrupt is refused).
#pragma once

namespace fox::profile {

// Boot step, after the cores are online: starts sampling if fox.profile
// is given. A bad value is refused like any bad boot argument (status 2).
void Start();

// Prints each sampled core's most frequent functions (at most 25, at info
// level). The exit path calls it; a no-op without fox.profile.
void Report();

}  // namespace fox::profile
