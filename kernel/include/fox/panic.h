// Panics: the node stops with a report (message, registers where known, a
// symbolized backtrace) and exits with kExitPanic. Callable from any context.
#pragma once

namespace fox {

[[noreturn]] void Panic(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace fox

// Invariant checks (STYLE.md §4: asserts guard invariants only).
#define FOX_ASSERT(cond)                                                                                       \
  do {                                                                                                         \
    if (__builtin_expect(!(cond), 0)) ::fox::Panic("assertion failed: %s (%s:%d)", #cond, __FILE__, __LINE__); \
  } while (0)
