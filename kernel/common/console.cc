// The console's formatted writes (fox/console.h), for both platforms.
#include "fox/console.h"

#include <cstdarg>

#include "fox/format.h"

namespace fox::console {

void Printf(const char* fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  size_t n = FormatV(buf, sizeof buf, fmt, args);
  va_end(args);
  Write(buf, n < sizeof buf ? n : sizeof buf - 1);
}

void PrintFrame(int index, uint64_t addr, const char* name, uint64_t offset) {
  if (name != nullptr) {
    Printf("  #%-2d %#018llx %s+%#llx\n", index, (unsigned long long)addr, name, (unsigned long long)offset);
  } else {
    Printf("  #%-2d %#018llx ?\n", index, (unsigned long long)addr);
  }
}

}  // namespace fox::console
