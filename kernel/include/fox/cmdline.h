// The kernel command line: `fox.KEY=VALUE ... -- APP ARGS`.
//
// Arguments before `--` must be known `fox.*` keys (BootArgSpecs) with a
// valid value; anything else is an error that names the argument and what was
// expected, and the node exits with kExitUsage. Words after `--` are the
// application's argv[1..]. Double quotes group words ("a b" is one word).
// The parser copies the text into a fixed buffer: it runs before any allocator
// exists, and never allocates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "fox/result.h"

namespace fox {

enum class BootArgKind : uint8_t {
  kEnum,        // one of the '|'-separated words in `choices`
  kUInt,        // decimal integer in [min, max]
  kSize,        // bytes with optional K, M or G suffix, in [min, max]
  kString,      // any non-empty text
  kIpv4,        // A.B.C.D, each part 0-255
  kIpv4Prefix,  // A.B.C.D/NN, NN 0-32
};

struct BootArgSpec {
  const char* key;
  BootArgKind kind;
  const char* choices;
  uint64_t min;
  uint64_t max;
  const char* help;
  // Applied once at boot: a pool node taking a job without a reboot
  // (ReplaceBootArgs) must keep its value.
  bool boot_time = false;
};

// Each layer registers the boot arguments it honours, in its own folder,
// where a newcomer looks for them (Linux's module_param):
//   FOX_BOOT_ARG(dht_cores, "fox.dht_cores", BootArgKind::kUInt, nullptr, 1, 256, "...");
// `id` names the definition (unique in its file). The spec lands in the
// section fox_boot_args, which the linker keeps whole and bounds with
// __start_/__stop_ symbols: no constructor runs, nothing is allocated, and
// the table exists before the command line is parsed. A key is registered
// when the code that honours it lands, never before: an accepted argument
// must do something. A layer built as a static archive (hosted) makes the
// linker take its registration file (-Wl,-u, its CMakeLists.txt).
#define FOX_BOOT_ARG(id, ...)                              \
  [[gnu::used, gnu::retain, gnu::section("fox_boot_args"), \
    gnu::aligned(alignof(::fox::BootArgSpec))]] const ::fox::BootArgSpec fox_boot_arg_##id = {__VA_ARGS__}

// Every key the program registered (FOX_BOOT_ARG, in link order). Any context.
std::span<const BootArgSpec> BootArgSpecs();

class CommandLine {
 public:
  static constexpr size_t kMaxText = 4096;
  static constexpr size_t kMaxArgs = 64;
  static constexpr size_t kMaxAppArgs = 128;

  // Parses `text`. When `skip_image_name` is set the first word is the image's
  // path (multiboot1 loaders prepend it) and becomes argv[0]. On failure
  // returns kInvalidArgument and Error() says why; the object is then empty.
  // `specs`: the keys it accepts (default: every registered one).
  Result<void> Parse(std::string_view text, bool skip_image_name, std::span<const BootArgSpec> specs = BootArgSpecs());

  // The value given for `key`, or nullptr if absent.
  const char* Get(std::string_view key) const;
  // The value of a kUInt or kSize key, or `fallback` if absent.
  uint64_t GetNumber(std::string_view key, uint64_t fallback) const;

  // argv for the application's main: argv[0] is the image name (or "fox"),
  // then the words after `--`, then a null pointer.
  int argc() const { return int(app_argc_); }
  char** argv() { return app_argv_; }

  // The arguments as given, for the boot banner: "fox.log=debug -- a b", or
  // "" when there are none; truncated to fit, always NUL-terminated (size > 0).
  void Describe(char* buf, size_t size) const;

  // Why the last Parse failed.
  const char* error() const { return error_; }
  size_t num_args() const { return num_args_; }
  const char* key(size_t i) const { return keys_[i]; }
  const char* value(size_t i) const { return values_[i]; }

 private:
  Result<void> Fail(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  Result<void> Validate(const BootArgSpec& spec, const char* key, const char* value);

  char text_[kMaxText + 1] = {};
  const char* keys_[kMaxArgs] = {};
  const char* values_[kMaxArgs] = {};
  uint64_t numbers_[kMaxArgs] = {};
  size_t num_args_ = 0;
  char* app_argv_[kMaxAppArgs + 2] = {};
  size_t app_argc_ = 0;
  char error_[512] = {};
};

// Parses "123", "64K", "2M", "1G" into bytes; kInvalidArgument or kOutOfRange.
Result<uint64_t> ParseSize(std::string_view text);
// Parses a decimal unsigned integer; kInvalidArgument or kOutOfRange.
Result<uint64_t> ParseUInt(std::string_view text);

}  // namespace fox
