#include "cpu_init.h"

#include <atomic>
#include <cstring>

#include "cpu.h"
#include "fox/boot_args.h"
#include "fox/core.h"
#include "fox/log.h"
#include "interrupts.h"
#include "lapic.h"
#include "percpu.h"
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
  // The probe runs while other cores run (the boot core's first idle): a
  // #GP anywhere but at an MWAIT is not the probe's.
  const uint8_t* at = reinterpret_cast<const uint8_t*>(frame->rip);
  if (at[0] != 0x0F || at[1] != 0x01 || at[2] != 0xC9) return false;
  g_probe_faulted = true;
  frame->rip += 3;  // mwait is 0F 01 C9
  return true;
}

// Whether MWAIT waits. With the APIC timer 50 us ahead, a real MWAIT
// lasts until that interrupt (or another one); an emulated one returns
// before it, with no interrupt taken. The majority of three tries decides,
// so that neither a stray wake-up nor the emulator's thread being
// descheduled (or translating this code the first time) decides alone. A
// try that reached MWAIT only after the deadline (its thread descheduled
// on the way) says nothing and is not counted: under a loaded host such
// tries once made an emulator's MWAIT look like a waiting one, and idle
// cores then waited on it for wake-ups that never came (a hung node).
bool MwaitWaits() {
  percpu::CoreLocal* local = percpu::Current();
  int waited = 0, returned = 0;
  for (int tries = 0; tries < 64 && waited < 2 && returned < 2; ++tries) {
    uint64_t interrupts = local->interrupts;
    uint64_t start = x86::Rdtsc();
    uint64_t deadline = start + tsc::NsToTicks(50000);
    lapic::ArmTimer(deadline);
    x86::Monitor(g_probe_line);
    uint64_t entered = x86::Rdtsc();
    x86::StiMwaitCli(0);
    uint64_t end = x86::Rdtsc();
    lapic::ArmTimer(0);
    if (entered >= deadline) continue;
    if (local->interrupts == interrupts && end < deadline) {
      ++returned;
    } else {
      ++waited;
    }
  }
  LOG_DEBUG("idle: MWAIT probe: %d of %d tries waited for the timer", waited, waited + returned);
  return waited >= 2;
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
  cr0 &= ~(1ull << 2);                              // EM: no x87 emulation
  cr0 |= (1ull << 1) | (1ull << 5) | (1ull << 16);  // MP, NE, WP
  cr0 &= ~(1ull << 3);                              // TS
  x86::WriteCr0(cr0);
  x86::WriteCr4(x86::ReadCr4() | (1ull << 9) | (1ull << 10));  // OSFXSR, OSXMMEXCPT
  asm volatile("fninit");                                      // MXCSR resets to 0x1F80: SSE exceptions masked
}

namespace {

constexpr uint64_t kPollNs = 1000000;
const char* g_want = "auto";                // fox.idle
uint32_t g_leaf5_ebx = 0, g_leaf5_ecx = 0;  // CPUID.05H
std::atomic<bool> g_probe_pending{false};

// Publishes the fields before the mode: other cores read the mode first.
void Publish(IdleMode mode, uint64_t poll_ns, bool interrupt_break) {
  uint32_t line = g_leaf5_ebx & 0xFFFF;
  if (line != 0) g_idle.monitor_line = line;
  g_idle.poll_ns = poll_ns;
  g_idle.interrupt_break = interrupt_break;
  std::atomic_ref<IdleMode>(g_idle.mode).store(mode, std::memory_order_release);
}

// The mode, once whether MWAIT waits (`waits`) is known; logged.
void Settle(bool has_monitor, bool waits) {
  bool use_mwait = false;
  if (std::strcmp(g_want, "mwait") == 0) {
    use_mwait = has_monitor;
    if (!has_monitor) LOG_WARN("idle: fox.idle=mwait, but this CPU has no MONITOR/MWAIT: falling back to HLT");
  } else if (std::strcmp(g_want, "auto") == 0) {
    use_mwait = has_monitor;  // where it does not wait: poll the doorbell, then halt
  }
  if (!use_mwait) {
    Publish(IdleMode::kHlt, 0, false);
    LOG_INFO("idle: HLT, woken by IPI (fox.idle=%s%s)", g_want,
             std::strcmp(g_want, "auto") != 0 ? "" : ": no MONITOR/MWAIT");
    return;
  }
  bool advertised = (g_leaf5_ecx & 3) == 3;  // EMX (extensions enumerated) and IBE
  Publish(IdleMode::kMwait, waits ? 0 : kPollNs, waits && advertised && MwaitInterruptBreakWorks());
  if (waits) {
    LOG_INFO("idle: MWAIT on a per-core doorbell line (%u bytes), interrupts %s (fox.idle=%s)", g_idle.monitor_line,
             g_idle.interrupt_break ? "break it while masked" : "end it through sti;mwait", g_want);
  } else {
    LOG_INFO(
        "idle: MWAIT on a per-core doorbell line (%u bytes), but MWAIT does not wait on this CPU (an emulator): "
        "an idle core polls its doorbell for up to %llu us (as long as its recent idles suggest), then halts "
        "until an IPI (fox.idle=%s)",
        g_idle.monitor_line, (unsigned long long)(g_idle.poll_ns / 1000), g_want);
  }
}

}  // namespace

// `auto` and `mwait` take MWAIT wherever it exists (polling, then
// halting where it does not wait); `mwait` polls from the boot on, while
// `auto` halts until the probe has said whether MWAIT waits. Runs with
// interrupts masked, except inside the probes' waits.
void ChooseIdle() {
  const char* arg = BootArg("fox.idle");
  g_want = arg != nullptr ? arg : "auto";
  bool has_monitor = (x86::Cpuid(1).ecx >> 3) & 1;
  if (has_monitor && x86::Cpuid(0).eax >= 5) {
    auto leaf5 = x86::Cpuid(5);
    g_leaf5_ebx = leaf5.ebx;
    g_leaf5_ecx = leaf5.ecx;
  }
  // Processors MWAIT properly; only under a hypervisor or emulator
  // (CPUID.01H:ECX bit 31) does it take a probe.
  bool hypervisor = (x86::Cpuid(1).ecx >> 31) & 1;
  // The probes time the APIC timer: its calibration must not wait inside them.
  lapic::FinishCalibration();
  if (!has_monitor || std::strcmp(g_want, "hlt") == 0 || !hypervisor) {
    Settle(has_monitor, has_monitor && std::strcmp(g_want, "hlt") != 0);
    return;
  }
  // The probe waits for the timer: it runs when the boot core first has
  // nothing to do (ProbeIdle), not during the boot. Until then every core
  // halts (or, with fox.idle=mwait, polls then halts), which is right
  // whether MWAIT waits or not.
  if (std::strcmp(g_want, "mwait") == 0) Publish(IdleMode::kMwait, kPollNs, false);
  g_probe_pending.store(true, std::memory_order_relaxed);
}

bool ProbeIdle() {
  if (!g_probe_pending.load(std::memory_order_relaxed) || core::Current() != 0) return false;
  g_probe_pending.store(false, std::memory_order_relaxed);
  Settle(true, MwaitWaits());
  return true;
}

const IdleInfo& Idle() { return g_idle; }

}  // namespace fox::cpu
