// printf-style formatting into a caller's buffer, without allocation, locks or
// floating point, so it is safe in interrupt context and before the C library
// is initialised. Supports %d %i %u %x %X %o %p %s %c %% with flags '-', '0',
// width, precision (also '*'), and length modifiers hh h l ll z t j.
#pragma once

#include <cstdarg>
#include <cstddef>

namespace fox {

// Formats into buf (always NUL-terminated when size > 0). Returns the length
// the full output would have had, like vsnprintf.
size_t FormatV(char* buf, size_t size, const char* fmt, va_list args);
size_t Format(char* buf, size_t size, const char* fmt, ...) __attribute__((format(printf, 3, 4)));

}  // namespace fox
