// The event loop's platform hooks on native nodes (kernel/common/event/platform.h).
//
// Idle. Kernel cores arm their APIC timer for the next deadline; then every
// core waits in one of two ways (cpu::ChooseIdle picks, fox.idle=...):
//
// - HLT. A core with work for a sleeping core sends it an IPI (kWakeVector).
// - MWAIT. Each core owns a doorbell: one cache line, written only by cores
//   waking it (and cleared by its owner). The sleeping core MONITORs the
//   line and MWAITs; a waker writes the line, which ends the wait without
//   an interrupt, so an application core woken this way still takes none.
//   Interrupts end the wait too (timers and devices on kernel cores).
//
// No lost wake-ups. The loop (loop.cc) runs a Dekker handshake: the sleeper
// stores `sleeping = true`, fences, then checks its queues; a producer
// pushes, fences, then reads `sleeping`, and calls Wake only if it is set.
// With seq_cst on both sides at least one of them sees the other: either
// the sleeper finds the work and does not wait, or the producer sees the
// flag and rings. For HLT the ring is an IPI, which stays pending in the
// APIC while the sleeper has interrupts masked and ends the `sti; hlt`.
// For MWAIT the ring is a store to the doorbell, and the danger is a ring
// that lands between the queue check and the MONITOR: MONITOR arms only
// for writes after it, so the MWAIT would sleep through it. Hence, after
// MONITOR, the sleeper reads the doorbell and does not wait if it rang.
// A ring before the MONITOR is then seen by that read; one after it ends
// the MWAIT. The owner clears the doorbell when it stops waiting, never on
// the way in: a clear after the queue check could erase a ring whose work
// the check missed. A ring that arrives late (its producer saw `sleeping`
// of an earlier round) only causes one spurious wake-up, and the loop
// re-checks its queues after every return.
#include "../common/event/platform.h"

#include <atomic>

#include "cpu.h"
#include "cpu_init.h"
#include "fox/clock.h"
#include "fox/core.h"
#include "fox/irq_spinlock.h"
#include "lapic.h"
#include "memory.h"
#include "paging.h"
#include "percpu.h"
#include "tsc.h"

namespace fox::event::platform {
namespace {

// A doorbell per core, alone in its cache line so that nothing but a ring
// triggers its owner's monitor.
struct alignas(64) Doorbell {
  std::atomic<uint32_t> rung{0};
};
static_assert(sizeof(Doorbell) == 64);
Doorbell g_doorbells[core::kMaxCores];

void WaitHlt() { asm volatile("sti; hlt; cli" ::: "memory"); }

// Returns when the doorbell rang, an interrupt arrived or the deadline
// passed. MWAIT may also return for no reason (under QEMU's TCG on several
// cores it returns at once): such returns wait again here rather than go
// round the whole loop.
void WaitMwait(Doorbell& bell, uint64_t deadline_ns) {
  const cpu::IdleInfo& idle = cpu::Idle();
  percpu::CoreLocal* local = percpu::Current();
  uint64_t interrupts = local->interrupts;
  for (;;) {
    x86::Monitor(&bell.rung);
    if (bell.rung.load(std::memory_order_seq_cst) != 0) break;
    if (deadline_ns != 0 && clock::NowNs() >= deadline_ns) break;
    if (idle.interrupt_break) {
      // Interrupts stay masked: one ends the wait and is taken when the
      // loop unmasks them, which it does right after we return.
      x86::Mwait(0, 1);
      break;
    }
    x86::StiMwaitCli(0);
    if (local->interrupts != interrupts) break;
  }
  bell.rung.store(0, std::memory_order_relaxed);  // see "No lost wake-ups" above
}

}  // namespace

void WaitForWork(uint64_t deadline_ns) {
  bool kernel_core = percpu::Current()->kernel_core;
  if (kernel_core) lapic::ArmTimer(deadline_ns ? tsc::EntryTsc() + tsc::NsToTicks(deadline_ns) : 0);
  if (cpu::Idle().mode == cpu::IdleMode::kMwait) {
    WaitMwait(g_doorbells[core::Current()], kernel_core ? deadline_ns : 0);
  } else {
    WaitHlt();
  }
  if (kernel_core && deadline_ns) lapic::ArmTimer(0);
}

bool Wake(int core) {
  if (cpu::Idle().mode == cpu::IdleMode::kMwait) {
    if (core >= 0 && core < core::kMaxCores) g_doorbells[core].rung.store(1, std::memory_order_seq_cst);
    return false;
  }
  percpu::CoreLocal* c = percpu::Of(core);
  if (c != nullptr) lapic::SendIpi(c->apic_id, lapic::kWakeVector);
  return true;
}

bool HasTimerInterrupt() { return percpu::Current()->kernel_core; }

bool DisableInterrupts() {
  uint64_t flags;
  asm volatile("pushfq; popq %0; cli" : "=r"(flags)::"memory");
  return flags & (1 << 9);
}

void RestoreInterrupts(bool enabled) {
  if (enabled) x86::EnableInterrupts();
}

uintptr_t AllocStack(size_t bytes) {
  return memory::AllocStack(bytes, "the guard page below an event stack (stack overflow)");
}

void FreeStack(uintptr_t top, size_t bytes) { memory::FreeStack(top, bytes); }

}  // namespace fox::event::platform

namespace fox::irq {
bool Save() { return event::platform::DisableInterrupts(); }
void Restore(bool enabled) { event::platform::RestoreInterrupts(enabled); }
}  // namespace fox::irq
