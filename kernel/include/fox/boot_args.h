// The node's validated `fox.*` boot arguments (native: the kernel command
// line; hosted: the FOX_ARGS environment variable, same syntax and checks).
#pragma once

#include <cstdint>
#include <string_view>

namespace fox {

// The value given for `key` ("fox.node"), or nullptr. Any context.
const char* BootArg(std::string_view key);
// A kUInt/kSize argument's value, or `fallback` when absent.
uint64_t BootArgNumber(std::string_view key, uint64_t fallback);

}  // namespace fox
