#pragma once

#include <cstdint>

namespace fox::cpu {
// Boot step for every core: x87/SSE on (the C library and compiler use SSE),
// write-protect honoured in ring 0.
void InitFeatures();

// How an idle core waits for work (event_platform.cc does the waiting).
enum class IdleMode {
  kHlt,    // HLT; other cores wake it with an IPI (kWakeVector)
  kMwait,  // MONITOR a per-core doorbell line, MWAIT; a write to the line wakes it
};
struct IdleInfo {
  IdleMode mode = IdleMode::kHlt;
  // MWAIT with ECX bit 0: an interrupt ends the wait even with interrupts
  // masked (CPUID.05H:ECX bit 1, and the CPU does not fault on it).
  bool interrupt_break = false;
  uint32_t monitor_line = 64;  // bytes (CPUID.05H:EBX, largest monitor line)
  // 0 where MWAIT really waits. Where it returns at once (emulators: QEMU's
  // TCG runs it as a pause when there are several CPUs), an idle core would
  // spin: it polls its doorbell at most this long (event_platform.cc
  // adapts the window to its recent idles), then halts, and wakers seeing
  // it halted send the IPI (the scheme of Linux's guest haltpoll).
  uint64_t poll_ns = 0;
};

// Boot step on the boot core, after the IDT, the system vectors and the
// local APIC are up and before any core's event loop runs (main.cc calls it
// while the other processors start): chooses the idle mode from the CPU's
// features and `fox.idle=mwait|hlt|auto` (default auto); logs it. Under a
// hypervisor whether MWAIT waits takes a probe of about 100 us of waiting
// for the timer, left to the boot core's first idle (ProbeIdle); until
// then the mode is HLT (with fox.idle=mwait: MWAIT that polls, then halts).
void ChooseIdle();
// On the boot core while the probe is still to run: the probe and the
// final mode, logged; true then (its waits took interrupts), false at once
// anywhere else. Every core's idle path calls it, with interrupts masked.
bool ProbeIdle();
// The mode in force: it changes at most once, when the probe settles it
// (`mode` written last, with release). Any context.
const IdleInfo& Idle();
}  // namespace fox::cpu
