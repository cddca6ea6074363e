// What std::terminate does on both platforms: an exception that nobody
// catches (escaping main or an event), one thrown through a noexcept
// function, or a direct call ends the program with a panic report that names
// the exception's type (demangled) and what(), followed by a symbolized
// backtrace of where it was thrown, and status kExitPanic (125).
//
// The backtrace is of the thrower because std::terminate runs on the
// thrower's stack: when the unwinder's search phase finds no handler it
// returns to __cxa_throw, which calls std::terminate without unwinding a
// single frame. (After a noexcept function stopped the exception, the stack
// has been unwound to that function; the report then says so.)
#pragma once

#include <cstdint>

namespace fox::terminate {

// Makes the handler above std::terminate's handler. Start-up code of each
// platform calls it before main; a program may still std::set_terminate its
// own. Not thread-safe against a concurrent std::set_terminate.
void Install();

// ---- provided by each platform (native: x86_64/panic.cc; hosted:
// linux/platform.cc) ----

// Starts the report once the exception has been described (the description
// allocates): native stops the other cores; a second panic stops at once.
void PlatformBegin();
// The demangled name of the function containing `ip` and ip's offset in it,
// or nullptr. Called between PlatformBegin and PlatformStop.
const char* PlatformSymbol(uintptr_t ip, uintptr_t* offset);
// Ends the program with kExitPanic after the report.
[[noreturn]] void PlatformStop();

}  // namespace fox::terminate
