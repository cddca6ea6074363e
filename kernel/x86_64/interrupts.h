// Exceptions and interrupt vectors (native).
//
// All 256 vectors enter through isr.S into InterruptDispatch. Vectors 0-31
// are CPU exceptions: unless a handler claims one, they panic with registers
// and a symbolized backtrace. Vectors 32-255 are for devices and IPIs; their
// handlers run at interrupt level with interrupts disabled and must not
// allocate, block or throw (STYLE.md §6).
#pragma once

#include <cstdint>

namespace fox::interrupts {

struct Frame {
  uint64_t r15, r14, r13, r12, r11, r10, r9, r8, rbp, rdi, rsi, rdx, rcx, rbx, rax;
  uint64_t vector, error;
  uint64_t rip, cs, rflags, rsp, ss;
};

// Returns true if it handled the event (for exceptions: the faulting
// instruction may be retried), false to fall through to the panic.
using Handler = bool (*)(Frame* frame);

// Boot step: builds the IDT (every gate on an IST stack) and loads it on
// this core. Later cores call LoadIdt.
void Init();
void LoadIdt();

// Installs the handler for a vector; one handler per vector.
void SetHandler(uint8_t vector, Handler handler);

// Interrupts taken per vector on this core (STYLE.md §12).
uint64_t Count(uint8_t vector);

const char* ExceptionName(uint64_t vector);

}  // namespace fox::interrupts
