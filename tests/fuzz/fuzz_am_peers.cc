// fox::am::ParsePeers on any text (not only what the command line lets
// through: programs also pass it lists of their own). The first two bytes
// are the default port. It calls add for every entry or for none, and
// explains a refusal.
#include <cstdint>
#include <cstring>
#include <string_view>

#include "fox/net/am.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  uint16_t default_port = uint16_t(data[0] | data[1] << 8);
  std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
  size_t count = 0;
  const char* why = nullptr;
  auto r = fox::am::ParsePeers(
      text, default_port,
      [&](fox::NodeId node, uint32_t, uint16_t) {
        if (node > 0x7FFFFFFF) __builtin_trap();
        ++count;
      },
      &why);
  if (r.ok()) {
    if (count == 0) __builtin_trap();  // at least one entry, or an error
  } else if (count != 0 || why == nullptr || std::strlen(why) == 0) {
    __builtin_trap();
  }
  return 0;
}
