// Execution contexts: a stack and the registers saved when it is not
// running. x86-64 System V (the same code serves native and hosted builds).
#pragma once

#include <cstdint>

extern "C" {
// Saves callee-saved registers and the x87/SSE control words on the current
// stack, stores the stack pointer in *save_sp and resumes the context whose
// stack pointer is new_sp.
void fox_switch_context(uintptr_t* save_sp, uintptr_t new_sp);
}

namespace fox::event {

// Lays out a fresh context on the stack ending at `stack_top` (16-byte
// aligned) that calls entry(arg) when first switched to; entry never returns.
// Returns the stack pointer to switch to.
uintptr_t PrepareContext(uintptr_t stack_top, void (*entry)(void*), void* arg);

}  // namespace fox::event
