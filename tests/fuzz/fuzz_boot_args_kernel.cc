// Boot arguments through the kernel's own consumers: the command line is
// parsed and checked (cmdline.cc with the table of boot_args.cc), then each
// value the kernel takes on trust is taken the way it takes it:
//   fox.log     x86_64/main.cc: *ParseLogLevel(value), then SetLogLevel
//   fox.stack   x86_64/runtime.cc: GetNumber, the main stack's size
//   fox.kcores  x86_64/main.cc: int(GetNumber), smp::StartCores' count
//   fox.idle    x86_64/cpu_init.cc: strcmp against mwait, hlt, auto
//   the banner  x86_64/main.cc: CommandLine::Describe
// Whatever the parser accepts must be what those expect; what it refuses
// must say why.
#include <cstdint>
#include <cstring>
#include <string_view>

#include "fox/cmdline.h"
#include "fox/log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fox::CommandLine c;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (!c.Parse(text, false).ok()) {
    if (c.error()[0] == '\0') __builtin_trap();
    return 0;
  }
  if (const char* level = c.Get("fox.log")) {
    auto parsed = fox::ParseLogLevel(level);
    if (!parsed.ok()) __builtin_trap();  // main.cc dereferences it unchecked
    fox::SetLogLevel(*parsed);
    fox::SetLogLevel(fox::LogLevel::kInfo);
  }
  uint64_t stack = c.GetNumber("fox.stack", 1 << 20);
  if (stack < (64 << 10) || stack > (1ull << 30)) __builtin_trap();
  uint64_t kcores = c.GetNumber("fox.kcores", 1);
  if (kcores < 1 || kcores > 256 || int(kcores) < 1) __builtin_trap();
  if (const char* idle = c.Get("fox.idle")) {
    if (std::strcmp(idle, "mwait") != 0 && std::strcmp(idle, "hlt") != 0 && std::strcmp(idle, "auto") != 0) {
      __builtin_trap();
    }
  }
  char banner[512];
  c.Describe(banner, sizeof banner);
  if (std::strlen(banner) >= sizeof banner) __builtin_trap();
  char tiny[7];
  c.Describe(tiny, sizeof tiny);
  if (std::strlen(tiny) >= sizeof tiny) __builtin_trap();
  return 0;
}
