// Native panic reporting.
#pragma once

#include <cstdint>

#include "interrupts.h"

namespace fox::panic {

// Reports an unhandled CPU exception and stops the node.
[[noreturn]] void FromException(interrupts::Frame* frame);

// Prints "  #n 0x... function+0xoff" for each frame found from (rip, rbp).
void PrintBacktrace(uint64_t rip, uint64_t rbp);

// Stops the node after a report: kExitPanic through isa-debug-exit or ACPI.
[[noreturn]] void Stop();

}  // namespace fox::panic
