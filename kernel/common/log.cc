#include "fox/log.h"

#include <atomic>

#include "fox/clock.h"
#include "fox/console.h"
#include "fox/format.h"

namespace fox {
namespace {
std::atomic<uint8_t> g_level{uint8_t(LogLevel::kInfo)};
constexpr char kLevelLetter[] = {'D', 'I', 'W', 'E'};
}  // namespace

void SetLogLevel(LogLevel level) { g_level.store(uint8_t(level), std::memory_order_relaxed); }
LogLevel GetLogLevel() { return LogLevel(g_level.load(std::memory_order_relaxed)); }
bool LogEnabled(LogLevel level) { return uint8_t(level) >= g_level.load(std::memory_order_relaxed); }

Result<LogLevel> ParseLogLevel(std::string_view name) {
  if (name == "debug") return LogLevel::kDebug;
  if (name == "info") return LogLevel::kInfo;
  if (name == "warn") return LogLevel::kWarn;
  if (name == "error") return LogLevel::kError;
  return Error::kInvalidArgument;
}

void LogV(LogLevel level, const char* fmt, va_list args) {
  char line[kMaxLogLine];
  uint64_t ns = clock::NowNs();
  size_t n = Format(line, sizeof line, "[%5llu.%06llu] %c ", (unsigned long long)(ns / 1000000000),
                    (unsigned long long)(ns / 1000 % 1000000), kLevelLetter[uint8_t(level) & 3]);
  size_t body = FormatV(line + n, sizeof line - n, fmt, args);
  n += body;
  if (n + 2 > sizeof line) {  // truncated: mark it and keep room for the newline
    n = sizeof line - 5;
    line[n++] = '.';
    line[n++] = '.';
    line[n++] = '.';
  }
  line[n++] = '\n';
  console::Write(line, n);
}

void Log(LogLevel level, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  LogV(level, fmt, args);
  va_end(args);
}

}  // namespace fox
