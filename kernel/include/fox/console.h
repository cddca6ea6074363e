// The console: where logs, panics and the standard output of programs go.
// Native: the 16550 UART COM1 (the QEMU -serial device). Hosted: stderr.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fox::console {

// Writes n bytes; "\n" becomes "\r\n" on a UART. Callable from any context,
// including interrupt handlers and panics; it spins, never blocks on events,
// and never allocates. Writes from different cores are not interleaved
// within one call.
void Write(const char* data, size_t n);

// Formats (fox/format.h) into a buffer on the stack and writes it, cut at 511
// bytes: for reports that must not allocate (panics, std::terminate).
void Printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// One line of a backtrace: "  #INDEX ADDR NAME+OFFSET", or "?" for the name
// when it is null (an address outside every known function).
void PrintFrame(int index, uint64_t addr, const char* name, uint64_t offset);

}  // namespace fox::console
