// Tests that only make sense on a compute node (device interrupts).
#include <vector>

#include "fox/clock.h"
#include "fox/core.h"
#include "fox/timer.h"
#include "vmtest.h"
#include "x86_64/rtc.h"

namespace vmtest {

// Device (RTC, 1024 Hz) and timer interrupts on the kernel core for
// `ms` milliseconds: the application cores must take none.
int AppCoresQuiet(int argc, char** argv) {
  uint64_t ms = argc > 1 ? std::atoi(argv[1]) : 300;
  int n = fox::core::Online();
  std::vector<uint64_t> before(n);
  for (int c = 0; c < n; ++c) before[c] = fox::core::InterruptCount(c);
  CHECK(fox::rtc::StartPeriodicInterrupt(6).ok());
  auto timer_runs = std::make_shared<int>(0);
  auto periodic = fox::timer::StartPeriodic(1000000, [timer_runs] { ++*timer_runs; });
  fox::Promise<void> p;
  auto f = p.GetFuture();
  auto shared = std::make_shared<fox::Promise<void>>(std::move(p));
  fox::timer::Start(ms * 1000000, [shared] { shared->SetValue(); });
  f.Block();
  fox::timer::Cancel(periodic);
  fox::rtc::StopPeriodicInterrupt();
  uint64_t ticks = fox::rtc::Ticks();
  std::printf("device interrupts: %llu RTC ticks; %d timer callbacks on core 0\n", (unsigned long long)ticks, *timer_runs);
  CHECK(ticks > ms / 4);
  for (int c = 0; c < n; ++c) {
    uint64_t taken = fox::core::InterruptCount(c) - before[c];
    std::printf("core %d (%s): %llu interrupts\n", c, fox::core::IsKernelCore(c) ? "kernel" : "application",
                (unsigned long long)taken);
    if (fox::core::IsKernelCore(c)) {
      if (c == 0) CHECK(taken >= ticks);
    } else {
      CHECK(fox::core::InterruptCount(c) == 0);  // ever, not just in this window
    }
  }
  return 0;
}

}  // namespace vmtest
