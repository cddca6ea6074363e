// The kernel command line parser must reject or accept any text without
// reading out of bounds, and what it accepts must be self-consistent.
#include <cstdint>
#include <cstring>
#include <string_view>

#include "fox/cmdline.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fox::CommandLine c;
  bool skip = size > 0 && (data[0] & 1);
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (c.Parse(text, skip).ok()) {
    if (c.argc() < 1 || c.argv()[c.argc()] != nullptr) __builtin_trap();
    for (size_t i = 0; i < c.num_args(); ++i) {
      if (std::strncmp(c.key(i), "fox.", 4) != 0 || c.Get(c.key(i)) != c.value(i)) __builtin_trap();
    }
    for (int i = 0; i < c.argc(); ++i) (void)std::strlen(c.argv()[i]);
  } else if (c.error()[0] == '\0') {
    __builtin_trap();  // every failure explains itself
  }
  return 0;
}
