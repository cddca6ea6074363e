// Exceptions and interrupt vectors (native).
//
// All 256 vectors enter through isr.S into InterruptDispatch. Vectors 0-31
// are CPU exceptions: unless a handler claims one, they panic with registers
// and a symbolized backtrace. Vectors 32-255 are for devices and IPIs; their
// handlers run at interrupt level with interrupts disabled and must not
// allocate, block or throw (STYLE.md §6).
#pragma once

#include <cstdint>

#include "fox/result.h"

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

// Boot step: handlers of the system vectors (APIC timer, wake-up,
// TLB shootdown, panic stop).
void InstallSystemHandlers();

// Installs the handler for a vector; one handler per vector.
void SetHandler(uint8_t vector, Handler handler);

// Interrupts taken per vector by a core (STYLE.md §12).
uint64_t Count(int core, uint8_t vector);

// Device vectors: handed out once, to PCI drivers (MSI/MSI-X) and legacy
// devices (IOAPIC). Handlers of vectors >= 32 return nothing useful; the
// dispatcher acknowledges the APIC after them.
constexpr int kFirstDeviceVector = 0x30;
constexpr int kLastDeviceVector = 0xDF;
Result<uint8_t> AllocateVector(Handler handler);

// The address/data pair a PCI device writes to raise `vector` on the core
// with APIC id `apic_id` (MSI and MSI-X use the same format).
struct MsiMessage {
  uint64_t address;
  uint32_t data;
};
MsiMessage ComposeMsi(uint32_t apic_id, uint8_t vector);

const char* ExceptionName(uint64_t vector);

}  // namespace fox::interrupts
