// The event loop's platform hooks on native nodes (kernel/common/event/platform.h).
//
// Idle. Kernel cores arm their APIC timer for the next deadline; then every
// core waits in one of two ways (cpu::ChooseIdle picks, fox.idle=...):
//
// - HLT. A core with work for a sleeping core sends it an IPI (kWakeVector).
// - MWAIT. Each core owns a doorbell: one cache line holding its idle
//   state, written by the cores that wake it and by itself. The sleeping
//   core MONITORs the line and MWAITs; a waker writes kRung into the line,
//   which ends the wait without an interrupt, so an application core woken
//   this way takes none. Interrupts end the wait too (timers and devices
//   on kernel cores). Where MWAIT does not wait (emulators), the core polls
//   for up to IdleInfo::poll_ns (a window that adapts: ../common/event/idle.h) and then
//   halts, announcing kAsleep in the line; a waker that finds kAsleep sends
//   the IPI as well.
//
// No lost wake-ups. The loop (loop.cc) runs a Dekker handshake: the sleeper
// stores `sleeping = true`, fences, then checks its queues; a producer
// pushes, fences, then reads `sleeping`, and calls Wake only if it is set.
// With seq_cst on both sides at least one of them sees the other: either
// the sleeper finds the work and does not wait, or the producer sees the
// flag and rings. For HLT the ring is an IPI, which stays pending in the
// APIC while the sleeper has interrupts masked and ends the `sti; hlt`.
// For MWAIT the ring is an exchange on the doorbell, and the danger is a
// ring that lands after the queue check but before the MONITOR: MONITOR
// arms only for writes after it, so the MWAIT would sleep through it.
// Hence the sleeper announces itself with an exchange (kPolling) that
// reports a ring already there, and after every MONITOR re-reads the line
// before it MWAITs: a ring before the MONITOR is seen by that read, one
// after it ends the MWAIT. Going from polling to halting is a
// compare-and-swap kPolling -> kAsleep: it fails if a ring came first, and
// a ring after it sees kAsleep and sends an IPI, pending until the HLT.
// Wakers exchange, so each ring sees exactly one state. The owner resets
// the line to kAwake when it stops waiting: a ring it overwrites then was
// for a core that is awake and about to re-check its queues; a ring that
// arrives late (its producer saw `sleeping` of an earlier round) costs one
// spurious wake-up, after which the loop re-checks its queues.
#include "../common/event/platform.h"
#include "../common/event/idle.h"

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

// A doorbell per core (../common/event/idle.h), alone in its cache line so
// that nothing but a ring (or the owner) triggers its owner's monitor.
Doorbell g_doorbells[core::kMaxCores];

void WaitHlt() { asm volatile("sti; hlt; cli" ::: "memory"); }

// HLT, announced in the doorbell as asleep: a waker that already takes
// the idle mode to be MWAIT (cpu::ProbeIdle settled it while this core
// slept) then still sends the IPI.
void WaitHltAnnounced(Doorbell& bell) {
  if (bell.Sleep()) WaitHlt();
  bell.Done();
}

// MWAIT may end for no reason now and then; this many times in one wait
// means it does not wait at all.
constexpr int kMaxEarlyReturns = 256;

// Where MWAIT does not wait, how long each core polls before it halts
// (under TCG, 2 kernel cores serving the Dht: 419 k -> 502 k gets/s against
// HLT alone).
PollWindow g_poll_windows[core::kMaxCores];

// Returns when the doorbell rang, an interrupt arrived or the deadline
// passed. MWAIT may also return for no reason: such returns wait again here
// rather than go round the whole loop.
void WaitMwait(Doorbell& bell, uint64_t deadline_ns) {
  const cpu::IdleInfo& idle = cpu::Idle();
  percpu::CoreLocal* local = percpu::Current();
  uint64_t interrupts = local->interrupts;
  PollWindow& window = g_poll_windows[core::Current()];
  bool polls = idle.poll_ns != 0;  // MWAIT does not wait: poll, then halt
  uint64_t poll_until = polls ? clock::NowNs() + window.ns : 0;
  if (!bell.StartPolling()) return bell.Done();
  int early = 0;  // MWAITs that returned with nothing to show for it
  for (;;) {
    x86::Monitor(&bell.state);
    if (!bell.Polling()) break;
    uint64_t now = (deadline_ns != 0 || polls) ? clock::NowNs() : 0;
    if (deadline_ns != 0 && now >= deadline_ns) break;
    // Polled long enough, or MWAIT keeps returning at once (it does not
    // wait: an emulator the probe misjudged; spinning on it there starved
    // the other cores of the emulator's lock and hung a node): halt.
    if (polls ? now >= poll_until : early >= kMaxEarlyReturns) {
      if (bell.FallAsleep()) {
        WaitHlt();
        if (polls) window.Adapt(clock::NowNs() - now, idle.poll_ns);
      }
      break;
    }
    ++early;
    if (idle.interrupt_break) {
      // Interrupts stay masked: one ends the wait and is taken when the
      // loop unmasks them, right after we return.
      x86::Mwait(0, 1);
      break;
    }
    x86::StiMwaitCli(0);
    if (local->interrupts != interrupts) break;
  }
  bell.Done();
}

}  // namespace

void PollWhileBusy() {}  // devices interrupt

void WaitForWork(uint64_t deadline_ns) {
  // The probe's waits take interrupts, a wake-up IPI among them: the loop
  // looks at its queues again before it sleeps.
  if (cpu::ProbeIdle()) return;
  bool kernel_core = percpu::Current()->kernel_core;
  if (kernel_core) lapic::ArmTimer(deadline_ns ? tsc::EntryTsc() + tsc::NsToTicks(deadline_ns) : 0);
  if (cpu::Idle().mode == cpu::IdleMode::kMwait) {
    WaitMwait(g_doorbells[core::Current()], kernel_core ? deadline_ns : 0);
  } else {
    WaitHltAnnounced(g_doorbells[core::Current()]);
  }
  if (kernel_core && deadline_ns) lapic::ArmTimer(0);
}

bool Wake(int core) {
  percpu::CoreLocal* c = percpu::Of(core);
  if (c == nullptr) return false;
  if (cpu::Idle().mode == cpu::IdleMode::kMwait && !g_doorbells[core].Ring()) return false;
  lapic::SendIpi(c->apic_id, lapic::kWakeVector);
  return true;
}

bool HasTimerInterrupt() { return percpu::Current()->kernel_core; }

bool DisableInterrupts() { return x86::SaveAndDisableInterrupts(); }

void RestoreInterrupts(bool enabled) { x86::RestoreInterrupts(enabled); }

uintptr_t AllocStack(size_t bytes) {
  return memory::AllocStack(bytes, "the guard page below an event stack (stack overflow)");
}

void FreeStack(uintptr_t top, size_t bytes) { memory::FreeStack(top, bytes); }

}  // namespace fox::event::platform

namespace fox::irq {
bool Save() { return event::platform::DisableInterrupts(); }
void Restore(bool enabled) { event::platform::RestoreInterrupts(enabled); }
}  // namespace fox::irq
