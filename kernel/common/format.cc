// A small vsnprintf: the kernel's own, because the C library's printf touches
// thread-local state (locale, errno) that does not exist in early boot or in an
// interrupt handler.
#include "fox/format.h"

#include <cstdint>

namespace fox {
namespace {

// Few distinct code paths: one out-of-line routine writes every piece of
// every field (under an emulator each path is translated on first use).
struct Out {
  char* buf;
  size_t size;
  size_t len = 0;
};

// `n` bytes of `s`, or `n` times `fill` when `s` is null.
[[gnu::noinline]] void Emit(Out& out, const char* s, char fill, size_t n) {
  for (size_t i = 0; i < n; ++i, ++out.len) {
    if (out.len + 1 < out.size) out.buf[out.len] = s != nullptr ? s[i] : fill;
  }
}

struct Spec {
  bool left = false;
  bool zero = false;
  bool plus = false;
  bool space = false;
  bool alt = false;
  size_t width = 0;
  int precision = -1;
};

// A field: `head` (sign, prefix), `zeros` zeros, then `body`, padded with
// spaces to the width.
void Field(Out& out, const Spec& spec, const char* head, size_t head_n, size_t zeros, const char* body, size_t n) {
  size_t total = head_n + zeros + n;
  size_t pad = spec.width > total ? spec.width - total : 0;
  if (!spec.left) Emit(out, nullptr, ' ', pad);
  Emit(out, head, 0, head_n);
  Emit(out, nullptr, '0', zeros);
  Emit(out, body, 0, n);
  if (spec.left) Emit(out, nullptr, ' ', pad);
}

size_t ParseNumber(const char*& p) {
  size_t v = 0;
  while (*p >= '0' && *p <= '9') v = v * 10 + size_t(*p++ - '0');
  return v;
}

}  // namespace

size_t FormatV(char* buf, size_t size, const char* fmt, va_list args) {
  Out out{buf, size};
  for (const char* p = fmt; *p != '\0'; ++p) {
    const char* text = p;
    while (*p != '\0' && *p != '%') ++p;
    Emit(out, text, 0, size_t(p - text));
    if (*p == '\0') break;
    Spec spec;
    for (;; ++p) {
      char f = p[1];
      if (f == '-')
        spec.left = true;
      else if (f == '0')
        spec.zero = true;
      else if (f == '+')
        spec.plus = true;
      else if (f == ' ')
        spec.space = true;
      else if (f == '#')
        spec.alt = true;
      else
        break;
    }
    ++p;
    if (*p == '*') {
      int width = va_arg(args, int);
      if (width < 0) spec.left = true;
      spec.width = width < 0 ? 0u - unsigned(width) : unsigned(width);
      ++p;
    } else {
      spec.width = ParseNumber(p);
    }
    if (*p == '.') {
      ++p;
      if (*p == '*') {
        spec.precision = va_arg(args, int);  // negative: as if none
        ++p;
      } else {
        spec.precision = int(ParseNumber(p));
      }
    }
    int length = 0;  // 0 int, 1 long, 2 long long / size_t / ptrdiff_t / intmax_t, -1 short, -2 char
    for (;; ++p) {
      if (*p == 'l')
        length = length == 1 ? 2 : 1;
      else if (*p == 'z' || *p == 't' || *p == 'j')
        length = 2;
      else if (*p == 'h')
        length = length == -1 ? -2 : -1;
      else
        break;
    }
    char conv = *p;
    if (conv == '\0') break;
    if (conv == 's' || conv == 'c') {
      char c[1];
      const char* str = c;
      size_t n = 1;
      if (conv == 'c') {
        c[0] = char(va_arg(args, int));
      } else {
        str = va_arg(args, const char*);
        if (str == nullptr) str = "(null)";
        for (n = 0; str[n] != '\0' && (spec.precision < 0 || n < size_t(spec.precision));) ++n;
      }
      Field(out, spec, nullptr, 0, 0, str, n);
      continue;
    }
    if (conv != 'd' && conv != 'i' && conv != 'u' && conv != 'x' && conv != 'X' && conv != 'o' && conv != 'p') {
      // %% is itself; an unknown conversion is printed verbatim (without
      // its flags), so that the bug is visible.
      char verbatim[2] = {'%', conv};
      Emit(out, verbatim + (conv == '%'), 0, conv == '%' ? 1 : 2);
      continue;
    }
    // One va_arg per size (an int may be read as unsigned), then the sign.
    uint64_t v;
    if (conv == 'p') {
      v = reinterpret_cast<uintptr_t>(va_arg(args, void*));
    } else if (length >= 1) {
      static_assert(sizeof(long) == sizeof(long long) && sizeof(size_t) == 8, "LP64");
      v = va_arg(args, unsigned long long);  // long, long long, size_t: one size
    } else {
      v = va_arg(args, unsigned);
    }
    bool is_signed = conv == 'd' || conv == 'i';
    if (length <= 0 && conv != 'p') {
      unsigned bits = length == 0 ? 32 : length == -1 ? 16 : 8;
      v &= (uint64_t{1} << bits) - 1;
      if (is_signed && (v >> (bits - 1)) != 0) v |= ~uint64_t{0} << bits;  // sign-extend
    }
    bool negative = is_signed && int64_t(v) < 0;
    if (negative) v = 0 - v;
    char head[3];
    size_t head_n = 0;
    if (negative || (is_signed && (spec.plus || spec.space))) head[head_n++] = negative ? '-' : spec.plus ? '+' : ' ';
    unsigned base = conv == 'o' ? 8 : conv == 'x' || conv == 'X' || conv == 'p' ? 16 : 10;
    if (conv == 'p' || (spec.alt && v != 0 && base == 16)) {
      head[head_n++] = '0';
      head[head_n++] = conv == 'X' ? 'X' : 'x';
    }
    const char* table = conv == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
    char digits[24];
    size_t n = 0;
    for (uint64_t rest = v; rest != 0; rest /= base) digits[sizeof digits - ++n] = table[rest % base];
    if (v == 0 && spec.precision != 0) digits[sizeof digits - ++n] = '0';
    size_t zeros = spec.precision > int(n) ? size_t(spec.precision) - n : 0;
    // %#o: as many zeros as it takes for the first digit to be one.
    if (conv == 'o' && spec.alt && zeros == 0 && (n == 0 || digits[sizeof digits - n] != '0')) zeros = 1;
    if (spec.zero && !spec.left && spec.precision < 0 && spec.width > head_n + n) zeros = spec.width - head_n - n;
    Field(out, spec, head, head_n, zeros, digits + sizeof digits - n, n);
  }
  if (size > 0) buf[out.len < size ? out.len : size - 1] = '\0';
  return out.len;
}

size_t Format(char* buf, size_t size, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  size_t n = FormatV(buf, size, fmt, args);
  va_end(args);
  return n;
}

}  // namespace fox
