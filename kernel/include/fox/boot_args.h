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

// Pool nodes (apps/agent): the app that runs next on this node, without a
// reboot, gets `text` as its boot arguments (the command line's syntax and
// checks). The arguments applied at boot must keep their values (those
// registered with boot_time, cmdline.h: the agent's node, address, key,
// cores and stack are the job's): kInvalidArgument otherwise, and *error
// says which. fox.log is
// applied again. Pointers from BootArg stay valid (the old arguments are
// kept). Native builds (hosted: kUnsupported). Event context, one core: no
// other core may read arguments meanwhile.
Result<void> ReplaceBootArgs(std::string_view text, const char** error = nullptr);
// main's argc and argv of the current boot arguments (after ReplaceBootArgs,
// the new ones: argv[0] "fox", then the words after `--`).
int AppArgc();
char** AppArgv();
// What an app returns from main to hand the node over to the app that the
// replaced boot arguments name (the pool image's main starts it); not an
// exit status.
inline constexpr int kHandOver = 0x464F58;

// Tests and fuzzers, hosted builds only: replaces the boot arguments with
// `text` (FOX_ARGS syntax), checked as at start-up. On failure returns
// kInvalidArgument, no argument is set any more, and *error (when given)
// says why (valid until the next call). Pointers from BootArg die with the
// next call. Not thread-safe: no other core may read arguments meanwhile.
Result<void> SetBootArgsForTesting(std::string_view text, const char** error = nullptr);

}  // namespace fox
