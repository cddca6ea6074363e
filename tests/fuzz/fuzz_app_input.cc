// The apps' input files (apps/common/input.h): the splits of any text are
// its bytes, each once, whatever their number; every line's fields parse
// to a finite number or an error naming the file and offset, never a crash.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "common/input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  uint64_t n = data[0] % 16 + 1;
  std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  auto read = [&](uint64_t offset, uint64_t length) {
    return offset >= text.size() ? std::string() : text.substr(offset, length);
  };
  std::string joined;
  for (uint64_t b = 0; b < n; ++b) {
    fox::apps::Split split = fox::apps::SplitOf(text.size(), b, n, read);
    if (!split.text.empty() && split.offset != joined.size()) __builtin_trap();
    joined += split.text;
    fox::apps::ForEachLine(split.text, split.offset, [&](uint64_t offset, const std::vector<std::string_view>& fields) {
      if (offset >= text.size() || fields.empty()) __builtin_trap();
      for (std::string_view f : fields) {
        try {
          double v = fox::apps::ParseReal("in", offset, f);
          if (v != v || v - v != 0) __builtin_trap();
        } catch (const std::runtime_error& e) {
          if (std::string(e.what()).rfind("in: byte ", 0) != 0) __builtin_trap();
        }
        try {
          if (fox::apps::ParseIndex("in", offset, f, 1000) >= 1000) __builtin_trap();
        } catch (const std::runtime_error&) {
        }
      }
    });
  }
  if (joined != text) __builtin_trap();
  return 0;
}
