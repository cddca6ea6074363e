// What lwIP asks of its platform with NO_SYS=1: a millisecond clock,
// random numbers, diagnostics and assertions (port/arch/cc.h).
#include <cstdarg>
#include <cstdint>
#include <cstdlib>

#include "fox/clock.h"
#include "fox/format.h"
#include "fox/log.h"
#include "fox/panic.h"
#include "lwip/sys.h"

extern "C" {

// Milliseconds since boot; lwIP only compares differences, so the 32-bit
// wrap (49 days) is fine.
u32_t sys_now(void) { return u32_t(fox::clock::NowNs() / 1000000); }

uint32_t fox_lwip_rand(void) { return arc4random(); }

void fox_lwip_diag(const char* fmt, ...) {
  char line[fox::kMaxLogLine];
  va_list args;
  va_start(args, fmt);
  fox::FormatV(line, sizeof line, fmt, args);
  va_end(args);
  // lwIP's messages carry their own newlines.
  size_t n = 0;
  while (line[n] != '\0') ++n;
  while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
  fox::Log(fox::LogLevel::kDebug, "lwip: %s", line);
}

void fox_lwip_assert(const char* message, const char* file, int line) {
  fox::Panic("lwip: assertion \"%s\" failed at %s:%d", message, file, line);
}

}  // extern "C"
