// FTQ as a Linux process (the baseline until the Linux guest exists): the
// same loop as tests/bench/native/ftq.cc, pinned to one CPU.
#include <sched.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "ftq_core.h"

int main(int argc, char** argv) {
  uint64_t quantum_us = argc > 1 ? std::atoi(argv[1]) : 1000;
  int quanta = argc > 2 ? std::atoi(argv[2]) : 2000;
  int cpu = argc > 3 ? std::atoi(argv[3]) : 1;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof set, &set);
  auto now = [] {
    return uint64_t(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
  };
  auto r = ftq::Summarize(ftq::Run(now, quantum_us * 1000, quanta));
  std::printf("ftq linux cpu %d quanta %d mean %.1f cov %.6f min %.0f max %.0f\n", cpu, quanta, r.mean, r.cov, r.min,
              r.max);
  return 0;
}
