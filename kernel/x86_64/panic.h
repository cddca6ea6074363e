// Native panic reporting.
#pragma once

#include <cstdint>

#include "interrupts.h"

namespace fox::panic {

// Reports an unhandled CPU exception and stops the node.
[[noreturn]] void FromException(interrupts::Frame* frame);

// Prints "  #n 0x... function+0xoff" for each frame found from (rip, rbp).
void PrintBacktrace(uint64_t rip, uint64_t rbp);

// Prints the backtrace of the calling context using the unwind tables, which
// also covers the C library's frames (built without frame pointers). Not
// for interrupt context.
void PrintUnwoundBacktrace();

// Prints the return addresses found on the stack from `rsp` upwards: for
// code without frame pointers or unwind tables (musl). Words that point just
// after a call instruction in the image count; stale ones may appear.
void PrintStackScan(uint64_t rsp);

// Starts a panic report: interrupts off, the other cores stopped; a second
// panic on the same core stops at once, one on another core waits forever.
void Begin();

// Stops the node after a report: kExitPanic through isa-debug-exit or ACPI.
[[noreturn]] void Stop();

}  // namespace fox::panic
