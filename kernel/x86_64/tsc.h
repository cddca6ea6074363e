// The TSC clock (fox::clock::NowNs on native nodes).
#pragma once

#include <cstdint>

#include "cpu.h"

namespace fox::tsc {

// A reading of another clock (PIT, APIC timer) paired with the TSC: `tsc` is
// the TSC halfway through the read and `spread` how long the read took. Under
// emulation a vCPU preempted in the middle of a read shows as a wide spread,
// so calibrations keep the tightest of a few readings and check what is left.
template <typename T>
struct Paired {
  T value;
  uint64_t tsc;
  uint64_t spread;
};
template <typename Read>
auto ReadPaired(Read read, int tries = 3) {
  Paired<decltype(read())> best{};
  for (int i = 0; i < tries; ++i) {
    uint64_t before = x86::Rdtsc();
    auto v = read();
    uint64_t after = x86::Rdtsc();
    if (i == 0 || after - before < best.spread) best = {v, before + (after - before) / 2, after - before};
  }
  return best;
}
// The uncertainty above which a calibration (the TSC's, the APIC timer's)
// is taken again.
inline constexpr uint64_t kMaxErrorPpm = 1000;
// Parts per million of uncertainty that two paired readings `ticks` TSC ticks
// apart leave in a rate measured between them.
inline uint64_t PairedErrorPpm(uint64_t spread_a, uint64_t spread_b, uint64_t ticks) {
  return ticks ? (spread_a + spread_b) / 2 * 1000000 / ticks : 1000000;
}

// Boot step: finds the TSC frequency from an exact source (CPUID leaf 0x15,
// the hypervisor frequency leaf, KVM's pvclock) or else starts timing it
// against the PIT in the background. Boot core, interrupts off.
void Init();
// Boot step, some milliseconds later: completes a PIT calibration (NowNs()
// reads 0 until then) and logs the result.
void FinishCalibration();

uint64_t FrequencyHz();
// Uncertainty of a PIT calibration (0 for exact sources).
uint64_t ErrorPpm();
const char* Source();  // "cpuid-15h", "hypervisor", "kvmclock", "pit", "assumed"
// The TSC when the boot code was entered (the zero of NowNs).
uint64_t EntryTsc();
// TSC ticks -> nanoseconds, without overflow for centuries of ticks.
uint64_t TicksToNs(uint64_t ticks);
// Nanoseconds -> TSC ticks.
uint64_t NsToTicks(uint64_t ns);
// Busy-waits (used where no event loop exists yet: PIT-free delays, exit).
void SpinNs(uint64_t ns);

}  // namespace fox::tsc
