// The local APIC of each core: x2APIC through MSRs when the CPU has it, else
// xAPIC through MMIO. Interrupt acknowledgement, inter-processor interrupts
// and the per-core timer (TSC-deadline mode when available, else one-shot
// with a rate calibrated against the TSC).
#pragma once

#include <cstdint>

namespace fox::lapic {

constexpr uint8_t kSpuriousVector = 0xFF;
constexpr uint8_t kTimerVector = 0xEF;
constexpr uint8_t kWakeVector = 0xF0;       // "work arrived": does nothing but wake
constexpr uint8_t kShootdownVector = 0xF1;  // page-table change: flush the TLB
constexpr uint8_t kPanicVector = 0xF2;      // another core panicked: stop
constexpr uint8_t kBootJobVector = 0xF3;    // a starting core has a boot job (smp::StartBootJob)

// Boot step on every core: enables the APIC (x2APIC if present), masks the
// timer and LINT pins, accepts all priorities.
void InitCore();

uint32_t Id();  // this core's APIC id
bool IsX2Apic();

// Acknowledges the interrupt being handled. Interrupt context.
void Eoi();

// Fixed-vector IPI to one core by APIC id. Any context.
void SendIpi(uint32_t apic_id, uint8_t vector);
// INIT and STARTUP IPIs for SMP bring-up (boot core only).
void SendInit(uint32_t apic_id);
void SendStartup(uint32_t apic_id, uint8_t page);

// Arms this core's timer to interrupt at `tsc_deadline` (absolute TSC), or
// disarms it with 0. Interrupts must be disabled while calling. In one-shot
// mode the first call, which must come from the boot core, finishes timing
// the APIC timer against the TSC (after tsc::FinishCalibration), waiting
// for whatever is left of its window since InitCore (1 ms, more when the
// first reading was slow).
void ArmTimer(uint64_t tsc_deadline);
// Finishes timing the one-shot timer now if it is pending (see ArmTimer):
// for callers that time the timer themselves and must not have the wait
// fall inside their measurement. Boot core.
void FinishCalibration();

// Masks the timer for good (application cores).
void DisableTimer();

}  // namespace fox::lapic
