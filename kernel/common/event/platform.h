// What the event loop needs from a platform (native: x86_64/event_platform.cc;
// hosted: linux/). Implemented once per platform; the loop itself is neutral.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fox::event::platform {

// Sleeps until an interrupt or wake-up might have brought work, or until
// `deadline_ns` (clock::NowNs time; 0 = none). Called with interrupts
// disabled; returns with interrupts disabled.
void WaitForWork(uint64_t deadline_ns);

// Called by the loop between rounds of events on a busy core: lets a
// platform whose devices only speak up while the core sleeps look at them
// anyway (hosted: watched descriptors, checked at most every 100 us).
// Native: nothing (devices interrupt).
void PollWhileBusy();

// Makes core `core` return from WaitForWork. Any context. Returns whether
// that took an interrupt (an IPI) rather than a write the core watches.
bool Wake(int core);

// Whether this core can be woken by its own timer (kernel cores natively).
// Cores that cannot are never put to sleep while a timer is armed.
bool HasTimerInterrupt();

// Disables interrupts on this core and returns whether they were enabled.
bool DisableInterrupts();
void RestoreInterrupts(bool enabled);

// A stack for an event context: `bytes` usable, with a guard below it.
// Returns its top, or 0 when out of memory.
uintptr_t AllocStack(size_t bytes);
void FreeStack(uintptr_t top, size_t bytes);

}  // namespace fox::event::platform
