// The node's validated `fox.*` boot arguments (native: the kernel command
// line; hosted: the FOX_ARGS environment variable, same syntax and checks).
#pragma once

#include <cstdint>
#include <string_view>

#include "fox/result.h"

namespace fox {

// The value given for `key` ("fox.node"), or nullptr. Any context.
const char* BootArg(std::string_view key);
// A kUInt/kSize argument's value, or `fallback` when absent.
uint64_t BootArgNumber(std::string_view key, uint64_t fallback);

// Tests and fuzzers, hosted builds only: replaces the boot arguments with
// `text` (FOX_ARGS syntax), checked as at start-up. On failure returns
// kInvalidArgument, no argument is set any more, and *error (when given)
// says why (valid until the next call). Pointers from BootArg die with the
// next call. Not thread-safe: no other core may read arguments meanwhile.
Result<void> SetBootArgsForTesting(std::string_view text, const char** error = nullptr);

}  // namespace fox
