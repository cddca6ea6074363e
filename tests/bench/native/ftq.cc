// FTQ on a fox node: the same loop on an application core and on a kernel
// core that takes device (RTC, 1024 Hz) and timer (1 kHz) interrupts, as a
// busy node's kernel core would. Prints one line per core:
//   ftq <role> core <n> quanta <q> mean <m> cov <c> min <x> max <y> interrupts <i>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "../ftq_core.h"
#include "fox/clock.h"
#include "fox/core.h"
#include "fox/event.h"
#include "fox/future.h"
#include "fox/timer.h"
#include "x86_64/rtc.h"

namespace {

struct Measured {
  ftq::Result r;
  uint64_t interrupts;
};

Measured MeasureOn(int core, uint64_t quantum_ns, int quanta) {
  auto promise = std::make_shared<fox::Promise<Measured>>();
  auto future = promise->GetFuture();
  fox::event::SpawnRemote(core, [=] {
    uint64_t before = fox::core::InterruptCount(core);
    auto counts = ftq::Run([] { return fox::clock::NowNs(); }, quantum_ns, quanta);
    promise->SetValue(Measured{ftq::Summarize(counts), fox::core::InterruptCount(core) - before});
  });
  return future.Block();
}

void Print(const char* role, int core, int quanta, const Measured& m) {
  std::printf("ftq %s core %d quanta %d mean %.1f cov %.6f min %.0f max %.0f interrupts %llu\n", role, core, quanta,
              m.r.mean, m.r.cov, m.r.min, m.r.max, (unsigned long long)m.interrupts);
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t quantum_us = argc > 1 ? std::atoi(argv[1]) : 1000;
  int quanta = argc > 2 ? std::atoi(argv[2]) : 2000;
  if (fox::core::Online() < 2 || fox::core::KernelCores() != 1) {
    std::printf("ftq: needs 2+ cores with fox.kcores=1\n");
    return 2;
  }
  (void)fox::rtc::StartPeriodicInterrupt(6);
  auto tick = fox::timer::StartPeriodic(1000000, [] {});
  Measured app = MeasureOn(1, quantum_us * 1000, quanta);
  Print("app", 1, quanta, app);
  Measured kernel = MeasureOn(0, quantum_us * 1000, quanta);
  Print("kernel", 0, quanta, kernel);
  fox::timer::Cancel(tick);
  fox::rtc::StopPeriodicInterrupt();
  return 0;
}
