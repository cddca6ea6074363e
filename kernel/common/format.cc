// A small vsnprintf: the kernel's own, because the C library's printf touches
// thread-local state (locale, errno) that does not exist in early boot or in an
// interrupt handler.
#include "fox/format.h"

#include <cstdint>

namespace fox {
namespace {

struct Out {
  char* buf;
  size_t size;
  size_t len = 0;
  void Put(char c) {
    if (len + 1 < size) buf[len] = c;
    ++len;
  }
  void Repeat(char c, int n) {
    for (int i = 0; i < n; ++i) Put(c);
  }
};

struct Spec {
  bool left = false;
  bool zero = false;
  bool plus = false;
  bool space = false;
  bool alt = false;
  int width = 0;
  int precision = -1;
};

void PutString(Out& out, const Spec& spec, const char* s) {
  if (s == nullptr) s = "(null)";
  size_t n = 0;
  while (s[n] != '\0' && (spec.precision < 0 || n < size_t(spec.precision))) ++n;
  int pad = spec.width > int(n) ? spec.width - int(n) : 0;
  if (!spec.left) out.Repeat(' ', pad);
  for (size_t i = 0; i < n; ++i) out.Put(s[i]);
  if (spec.left) out.Repeat(' ', pad);
}

void PutNumber(Out& out, Spec spec, uint64_t value, bool negative, unsigned base, bool upper, const char* prefix) {
  char digits[24];
  int n = 0;
  const char* table = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  if (value == 0 && spec.precision != 0) digits[n++] = '0';
  while (value != 0) {
    digits[n++] = table[value % base];
    value /= base;
  }
  char sign = negative ? '-' : spec.plus ? '+' : spec.space ? ' ' : '\0';
  int prefix_len = 0;
  while (prefix != nullptr && prefix[prefix_len] != '\0') ++prefix_len;
  int zeros = spec.precision > n ? spec.precision - n : 0;
  int body = n + zeros + prefix_len + (sign ? 1 : 0);
  int pad = spec.width > body ? spec.width - body : 0;
  if (spec.zero && !spec.left && spec.precision < 0) {
    zeros += pad;
    pad = 0;
  }
  if (!spec.left) out.Repeat(' ', pad);
  if (sign) out.Put(sign);
  for (int i = 0; i < prefix_len; ++i) out.Put(prefix[i]);
  out.Repeat('0', zeros);
  while (n > 0) out.Put(digits[--n]);
  if (spec.left) out.Repeat(' ', pad);
}

}  // namespace

size_t FormatV(char* buf, size_t size, const char* fmt, va_list args) {
  Out out{buf, size};
  for (const char* p = fmt; *p != '\0'; ++p) {
    if (*p != '%') {
      out.Put(*p);
      continue;
    }
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
      spec.width = va_arg(args, int);
      if (spec.width < 0) {
        spec.left = true;
        spec.width = -spec.width;
      }
      ++p;
    } else {
      while (*p >= '0' && *p <= '9') spec.width = spec.width * 10 + (*p++ - '0');
    }
    if (*p == '.') {
      ++p;
      spec.precision = 0;
      if (*p == '*') {
        spec.precision = va_arg(args, int);
        ++p;
      } else {
        while (*p >= '0' && *p <= '9') spec.precision = spec.precision * 10 + (*p++ - '0');
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
    switch (conv) {
      case 'd':
      case 'i': {
        int64_t v = length >= 2 ? va_arg(args, long long) : length == 1 ? va_arg(args, long) : va_arg(args, int);
        if (length == -1) v = short(v);
        if (length == -2) v = (signed char)(v);
        uint64_t mag = v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v);
        PutNumber(out, spec, mag, v < 0, 10, false, nullptr);
        break;
      }
      case 'u':
      case 'x':
      case 'X':
      case 'o': {
        uint64_t v = length >= 2   ? va_arg(args, unsigned long long)
                     : length == 1 ? va_arg(args, unsigned long)
                                   : va_arg(args, unsigned);
        if (length == -1) v = uint16_t(v);
        if (length == -2) v = uint8_t(v);
        unsigned base = conv == 'u' ? 10 : conv == 'o' ? 8 : 16;
        const char* prefix = nullptr;
        if (spec.alt && v != 0) prefix = conv == 'x' ? "0x" : conv == 'X' ? "0X" : conv == 'o' ? "0" : nullptr;
        spec.plus = spec.space = false;
        PutNumber(out, spec, v, false, base, conv == 'X', prefix);
        break;
      }
      case 'p': {
        uintptr_t v = reinterpret_cast<uintptr_t>(va_arg(args, void*));
        PutNumber(out, spec, v, false, 16, false, "0x");
        break;
      }
      case 's': PutString(out, spec, va_arg(args, const char*)); break;
      case 'c': {
        char s[2] = {char(va_arg(args, int)), '\0'};
        Spec cspec = spec;
        cspec.precision = -1;
        PutString(out, cspec, s);
        break;
      }
      case '%': out.Put('%'); break;
      default:  // unknown conversion: print it verbatim so the bug is visible
        out.Put('%');
        out.Put(conv);
        break;
    }
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
