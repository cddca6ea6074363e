// The console: where logs, panics and the standard output of programs go.
// Native: the 16550 UART COM1 (the QEMU -serial device). Hosted: stderr.
#pragma once

#include <cstddef>

namespace fox::console {

// Writes n bytes; "\n" becomes "\r\n" on a UART. Callable from any context,
// including interrupt handlers and panics; it spins, never blocks on events,
// and never allocates. Writes from different cores are not interleaved
// within one call.
void Write(const char* data, size_t n);

}  // namespace fox::console
