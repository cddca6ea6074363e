// The hosted platform's boot arguments (fox/boot_args.h): FOX_ARGS, parsed
// and checked by the kernel's command-line parser as on a node.
#include "fox/boot_args.h"
#include "fox/cmdline.h"
#include "hosted.h"

namespace fox {
namespace {
CommandLine g_args;
}  // namespace

const char* BootArg(std::string_view key) { return g_args.Get(key); }
uint64_t BootArgNumber(std::string_view key, uint64_t fallback) { return g_args.GetNumber(key, fallback); }

// A hosted place is a process of one app: nothing takes over from it.
Result<void> ReplaceBootArgs(std::string_view, const char** error) {
  if (error != nullptr) *error = "a hosted place cannot take another app's arguments";
  return Error::kUnsupported;
}
int AppArgc() { return 0; }
char** AppArgv() { return nullptr; }

Result<void> hosted::InstallBootArgs(std::string_view text, const char** error) {
  auto r = g_args.Parse(text, false);
  if (!r.ok() && error != nullptr) *error = g_args.error();
  return r;
}

Result<void> SetBootArgsForTesting(std::string_view text, const char** error) {
  return hosted::InstallBootArgs(text, error);
}

}  // namespace fox
