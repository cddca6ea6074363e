// The event loop's platform hooks on native nodes (kernel/common/event/platform.h).
#include "../common/event/platform.h"

#include "cpu.h"
#include "fox/irq_spinlock.h"
#include "fox/clock.h"
#include "lapic.h"
#include "memory.h"
#include "paging.h"
#include "percpu.h"
#include "tsc.h"

namespace fox::event::platform {

// Kernel cores arm their APIC timer for the next deadline; every core then
// halts until an interrupt (the timer, a device, or a wake-up IPI).
void WaitForWork(uint64_t deadline_ns) {
  bool kernel_core = percpu::Current()->kernel_core;
  if (kernel_core) lapic::ArmTimer(deadline_ns ? tsc::EntryTsc() + tsc::NsToTicks(deadline_ns) : 0);
  asm volatile("sti; hlt; cli" ::: "memory");
  if (kernel_core && deadline_ns) lapic::ArmTimer(0);
}

void Wake(int core) {
  percpu::CoreLocal* c = percpu::Of(core);
  if (c != nullptr) lapic::SendIpi(c->apic_id, lapic::kWakeVector);
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
