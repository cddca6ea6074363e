// The TSC clock (fox::clock::NowNs on native nodes).
#pragma once

#include <cstdint>

namespace fox::tsc {

// Boot step: finds the TSC frequency from an exact source (CPUID leaf 0x15,
// the hypervisor frequency leaf, KVM's pvclock) or else starts timing it
// against the PIT in the background. Boot core, interrupts off.
void Init();
// Boot step, some milliseconds later: completes a PIT calibration (NowNs()
// reads 0 until then) and logs the result.
void FinishCalibration();

uint64_t FrequencyHz();
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
