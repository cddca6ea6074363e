// Levelled kernel logging to the console.
//
// Lines look like `[    0.012345] I mem: 1024 MiB usable`. The level is set at
// boot by `fox.log=debug|info|warn|error` (default info). Logging formats into
// a stack buffer with fox::Format (no allocation) and writes with one
// console::Write, so it is callable from any context, interrupts included.
// Lines longer than kMaxLine bytes are truncated with "...".
#pragma once

#include <cstdarg>
#include <cstdint>
#include <string_view>

#include "fox/result.h"

namespace fox {

enum class LogLevel : uint8_t { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

constexpr size_t kMaxLogLine = 512;

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
bool LogEnabled(LogLevel level);
// "debug" -> kDebug, ...; kInvalidArgument otherwise.
Result<LogLevel> ParseLogLevel(std::string_view name);

void Log(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void LogV(LogLevel level, const char* fmt, va_list args);

}  // namespace fox

#define FOX_LOG(level, ...)                                       \
  do {                                                            \
    if (::fox::LogEnabled(level)) ::fox::Log(level, __VA_ARGS__); \
  } while (0)
#define LOG_DEBUG(...) FOX_LOG(::fox::LogLevel::kDebug, __VA_ARGS__)
#define LOG_INFO(...) FOX_LOG(::fox::LogLevel::kInfo, __VA_ARGS__)
#define LOG_WARN(...) FOX_LOG(::fox::LogLevel::kWarn, __VA_ARGS__)
#define LOG_ERROR(...) FOX_LOG(::fox::LogLevel::kError, __VA_ARGS__)
