#include "cpu_init.h"

#include <cstring>

#include "cpu.h"
#include "fox/boot_args.h"
#include "fox/log.h"
#include "interrupts.h"
#include "lapic.h"
#include "tsc.h"

namespace fox::cpu {
namespace {

IdleInfo g_idle;

// MWAIT's interrupt-break extension (ECX bit 0) is tried once with a #GP
// handler in place: some emulators (QEMU TCG up to at least 7.2) advertise
// it in CPUID.05H and then fault on any non-zero ECX. The APIC timer, armed
// 50 us ahead, ends the wait if the CPU does implement it; the interrupt
// stays pending (interrupts are masked) and is taken, harmlessly, later.
volatile bool g_probe_faulted = false;
alignas(64) volatile uint64_t g_probe_line[8];

bool ProbeFaultHandler(interrupts::Frame* frame) {
  g_probe_faulted = true;
  frame->rip += 3;  // mwait is 0F 01 C9
  return true;
}

bool MwaitInterruptBreakWorks() {
  interrupts::SetHandler(13, ProbeFaultHandler);
  lapic::ArmTimer(x86::Rdtsc() + tsc::NsToTicks(50000));
  x86::Monitor(g_probe_line);
  x86::Mwait(0, 1);
  lapic::ArmTimer(0);
  interrupts::SetHandler(13, nullptr);
  return !g_probe_faulted;
}

}  // namespace

void InitFeatures() {
  uint64_t cr0 = x86::ReadCr0();
  cr0 &= ~(1ull << 2);           // EM: no x87 emulation
  cr0 |= (1ull << 1) | (1ull << 5) | (1ull << 16);  // MP, NE, WP
  cr0 &= ~(1ull << 3);           // TS
  x86::WriteCr0(cr0);
  x86::WriteCr4(x86::ReadCr4() | (1ull << 9) | (1ull << 10));  // OSFXSR, OSXMMEXCPT
  asm volatile("fninit");  // MXCSR resets to 0x1F80: SSE exceptions masked
}

// `auto` takes MWAIT only where CPUID.05H describes a monitor line (real
// processors do; QEMU's TCG reports 0 there and emulates MWAIT as a pause,
// which would make every idle core spin). `mwait` takes it wherever the
// instruction exists.
void ChooseIdle() {
  const char* arg = BootArg("fox.idle");
  const char* want = arg != nullptr ? arg : "auto";
  bool has_monitor = (x86::Cpuid(1).ecx >> 3) & 1;
  x86::CpuidResult leaf5{};
  if (has_monitor && x86::Cpuid(0).eax >= 5) leaf5 = x86::Cpuid(5);
  uint32_t line = leaf5.ebx & 0xFFFF;
  bool use_mwait = false;
  if (std::strcmp(want, "mwait") == 0) {
    use_mwait = has_monitor;
    if (!has_monitor) LOG_WARN("idle: fox.idle=mwait, but this CPU has no MONITOR/MWAIT; falling back to HLT");
  } else if (std::strcmp(want, "auto") == 0) {
    use_mwait = has_monitor && line != 0;
  }
  if (use_mwait) {
    g_idle.mode = IdleMode::kMwait;
    if (line != 0) g_idle.monitor_line = line;
    bool advertised = (leaf5.ecx & 3) == 3;  // EMX (extensions enumerated) and IBE
    g_idle.interrupt_break = advertised && MwaitInterruptBreakWorks();
    LOG_INFO("idle: MWAIT on a per-core doorbell line (monitor line %u bytes%s), interrupts %s (fox.idle=%s)",
             g_idle.monitor_line, line == 0 ? " assumed" : "",
             g_idle.interrupt_break ? "break it while masked" : (advertised ? "wake it with sti;mwait (interrupt-break faults here)" : "wake it with sti;mwait"),
             want);
  } else {
    LOG_INFO("idle: HLT, woken by IPI (fox.idle=%s%s)", want,
             std::strcmp(want, "auto") == 0 ? (has_monitor ? ": MWAIT present but CPUID.05H gives no monitor line" : ": no MONITOR/MWAIT")
                                            : "");
  }
}

const IdleInfo& Idle() { return g_idle; }

}  // namespace fox::cpu
