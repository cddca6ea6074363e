// The multiboot parser must survive any boot information a loader (or a
// corrupted memory) could present. The input is the physical memory window;
// its first byte picks the protocol and the info offset.
#include <cstdint>
#include <cstring>
#include <vector>

#include "x86_64/multiboot.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  uint32_t magic = (data[0] & 1) ? fox::boot::kMultiboot2Magic : fox::boot::kMultiboot1Magic;
  uint64_t offset = (data[1] & 0x3F) * 8;
  std::vector<uint8_t> mem(data + 2, data + size);  // exact size: ASan sees overreads
  constexpr uint64_t kBase = 0x10000;
  fox::boot::PhysWindow window{mem.data(), kBase, mem.size()};
  static fox::boot::BootInfo info;
  char error[128];
  if (fox::boot::ParseBootInfo(magic, kBase + offset, window, &info, error, sizeof error).ok()) {
    if (info.num_regions > fox::boot::BootInfo::kMaxRegions) __builtin_trap();
    if (std::strlen(info.cmdline) > fox::boot::BootInfo::kMaxCommandLine) __builtin_trap();
  } else if (error[0] == '\0') {
    __builtin_trap();
  }
  return 0;
}
