#include "fox/cmdline.h"

#include <cstdarg>
#include <cstring>

#include "fox/format.h"

namespace fox {

Result<uint64_t> ParseUInt(std::string_view text) {
  if (text.empty()) return Error::kInvalidArgument;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return Error::kInvalidArgument;
    uint64_t digit = uint64_t(c - '0');
    if (v > (UINT64_MAX - digit) / 10) return Error::kOutOfRange;
    v = v * 10 + digit;
  }
  return v;
}

Result<uint64_t> ParseSize(std::string_view text) {
  uint64_t scale = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K':
      case 'k': scale = 1ull << 10; break;
      case 'M':
      case 'm': scale = 1ull << 20; break;
      case 'G':
      case 'g': scale = 1ull << 30; break;
      default: break;
    }
    if (scale != 1) text.remove_suffix(1);
  }
  FOX_TRY_ASSIGN(uint64_t v, ParseUInt(text));
  if (v > UINT64_MAX / scale) return Error::kOutOfRange;
  return v * scale;
}

namespace {
// "A.B.C.D" (with `prefix`: "A.B.C.D/NN"): four decimal parts 0-255, NN 0-32.
bool IsIpv4(std::string_view v, bool prefix) {
  if (prefix) {
    size_t slash = v.find('/');
    if (slash == std::string_view::npos || v.size() - slash - 1 > 2) return false;
    auto n = ParseUInt(v.substr(slash + 1));
    if (!n.ok() || *n > 32) return false;
    v = v.substr(0, slash);
  }
  for (int part = 0; part < 4; ++part) {
    size_t end = part < 3 ? v.find('.') : v.size();
    if (end == std::string_view::npos || end == 0 || end > 3) return false;
    auto n = ParseUInt(v.substr(0, end));
    if (!n.ok() || *n > 255) return false;
    v.remove_prefix(part < 3 ? end + 1 : end);
  }
  return v.empty();
}
}  // namespace

Result<void> CommandLine::Fail(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  FormatV(error_, sizeof error_, fmt, args);
  va_end(args);
  num_args_ = 0;
  app_argc_ = 0;
  app_argv_[0] = nullptr;
  return Error::kInvalidArgument;
}

Result<void> CommandLine::Validate(const BootArgSpec& spec, const char* key, const char* value) {
  std::string_view v(value);
  if (v.empty()) return Fail("boot argument '%s' needs a value: %s", key, spec.help);
  switch (spec.kind) {
    case BootArgKind::kEnum: {
      std::string_view choices(spec.choices);
      while (!choices.empty()) {
        size_t bar = choices.find('|');
        std::string_view word = choices.substr(0, bar);
        if (word == v) return Ok();
        if (bar == std::string_view::npos) break;
        choices.remove_prefix(bar + 1);
      }
      return Fail("bad boot argument '%s=%s': expected one of %s", key, value, spec.choices);
    }
    case BootArgKind::kUInt:
    case BootArgKind::kSize: {
      auto n = spec.kind == BootArgKind::kUInt ? ParseUInt(v) : ParseSize(v);
      if (!n.ok() || *n < spec.min || *n > spec.max) {
        return Fail("bad boot argument '%s=%s': expected %s from %llu to %llu", key, value,
                    spec.kind == BootArgKind::kUInt ? "an integer" : "a size (bytes, or with K/M/G)",
                    (unsigned long long)spec.min, (unsigned long long)spec.max);
      }
      numbers_[num_args_] = *n;
      return Ok();
    }
    case BootArgKind::kString: return Ok();
    case BootArgKind::kIpv4:
    case BootArgKind::kIpv4Prefix: {
      bool prefix = spec.kind == BootArgKind::kIpv4Prefix;
      if (IsIpv4(v, prefix)) return Ok();
      return Fail("bad boot argument '%s=%s': expected %s", key, value,
                  prefix ? "an IPv4 address and prefix length, A.B.C.D/NN" : "an IPv4 address, A.B.C.D");
    }
  }
  return Ok();
}

Result<void> CommandLine::Parse(std::string_view text, bool skip_image_name, std::span<const BootArgSpec> specs) {
  num_args_ = 0;
  app_argc_ = 0;
  error_[0] = '\0';
  if (text.size() > kMaxText) {
    return Fail("command line is %zu bytes; at most %zu are supported", text.size(), kMaxText);
  }
  // Split into NUL-terminated words in text_, honouring double quotes.
  char* words[kMaxArgs + kMaxAppArgs + 2];
  size_t num_words = 0;
  size_t out = 0;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) ++i;
    if (i == text.size()) break;
    if (num_words == sizeof words / sizeof words[0]) return Fail("too many words on the command line");
    words[num_words++] = &text_[out];
    bool quoted = false;
    while (i < text.size()) {
      char c = text[i];
      if (c == '"') {
        quoted = !quoted;
        ++i;
        continue;
      }
      if (!quoted && (c == ' ' || c == '\t' || c == '\n' || c == '\r')) break;
      if (c == '\0') return Fail("command line contains a NUL byte");
      text_[out++] = c;
      ++i;
    }
    if (quoted) return Fail("unterminated quote on the command line");
    text_[out++] = '\0';
  }

  size_t w = 0;
  static char kDefaultName[] = "fox";
  app_argv_[0] = kDefaultName;
  if (skip_image_name && num_words > 0 && std::strcmp(words[0], "--") != 0) app_argv_[0] = words[w++];
  app_argc_ = 1;
  for (; w < num_words; ++w) {
    char* word = words[w];
    if (std::strcmp(word, "--") == 0) {
      ++w;
      break;
    }
    if (std::strncmp(word, "fox.", 4) != 0) {
      return Fail(
          "unexpected boot argument '%s': kernel arguments are fox.KEY=VALUE; "
          "application arguments go after --",
          word);
    }
    char* eq = std::strchr(word, '=');
    if (eq == nullptr) return Fail("boot argument '%s' has no value (expected %s=VALUE)", word, word);
    *eq = '\0';
    const BootArgSpec* spec = nullptr;
    for (const BootArgSpec& s : specs) {
      if (std::strcmp(s.key, word) == 0) spec = &s;
    }
    if (spec == nullptr) {
      // The known keys in ascending order (the registration order is the
      // link's): each pass prints the least key above the last one printed.
      char known[384];
      size_t k = 0;
      const char* last = nullptr;
      for (size_t n = 0; n < specs.size() && k < sizeof known; ++n) {
        const char* next = nullptr;
        for (const BootArgSpec& s : specs) {
          if ((last == nullptr || std::strcmp(s.key, last) > 0) && (next == nullptr || std::strcmp(s.key, next) < 0)) {
            next = s.key;
          }
        }
        if (next == nullptr) break;
        k += Format(known + k, sizeof known - k, "%s%s", n ? ", " : "", next);
        last = next;
      }
      return Fail("unknown boot argument '%s' (known: %s)", word, known);
    }
    if (Get(word) != nullptr) return Fail("boot argument '%s' given twice", word);
    if (num_args_ == kMaxArgs) return Fail("more than %zu fox.* boot arguments", kMaxArgs);
    FOX_TRY(Validate(*spec, word, eq + 1));
    keys_[num_args_] = word;
    values_[num_args_] = eq + 1;
    ++num_args_;
  }
  for (; w < num_words; ++w) {
    if (app_argc_ == kMaxAppArgs + 1) return Fail("more than %zu application arguments", kMaxAppArgs);
    app_argv_[app_argc_++] = words[w];
  }
  app_argv_[app_argc_] = nullptr;
  return Ok();
}

void CommandLine::Describe(char* buf, size_t size) const {
  if (size == 0) return;
  size_t n = 0;
  buf[0] = '\0';
  // Format returns the length it wanted: stop once the buffer is full.
  for (size_t i = 0; i < num_args_ && n < size; ++i) {
    n += Format(buf + n, size - n, "%s%s=%s", i ? " " : "", keys_[i], values_[i]);
  }
  for (size_t i = 1; i < app_argc_ && n < size; ++i) {
    n += Format(buf + n, size - n, "%s%s", i == 1 ? (n ? " -- " : "-- ") : " ", app_argv_[i]);
  }
}

const char* CommandLine::Get(std::string_view key) const {
  for (size_t i = 0; i < num_args_; ++i) {
    if (key == keys_[i]) return values_[i];
  }
  return nullptr;
}

uint64_t CommandLine::GetNumber(std::string_view key, uint64_t fallback) const {
  for (size_t i = 0; i < num_args_; ++i) {
    if (key == keys_[i]) return numbers_[i];
  }
  return fallback;
}

}  // namespace fox
