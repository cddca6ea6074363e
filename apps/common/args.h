// The apps' `key=value` arguments (fox run APP -- key=value ...): each key
// a number in a range or one of a few words; anything else is refused with
// a line naming the argument and what every key accepts.
//
//   uint64_t points = 1000; std::string executor = "global";
//   fox::apps::Args args("kmeans");
//   args.UInt("points", &points, 1, 1 << 26).Choice("executor", &executor, "global|spmd");
//   if (!args.Parse(argc, argv)) return 2;
//
// Header-only: apps are built into node images, hosted programs and the
// pool image, each from its own sources.
#pragma once

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace fox::apps {

class Args {
 public:
  explicit Args(const char* app) : app_(app) {}

  // A decimal integer in [lo, hi].
  Args& UInt(const char* name, uint64_t* value, uint64_t lo, uint64_t hi) {
    keys_.push_back({name, Kind::kUInt, value, nullptr, nullptr, double(lo), double(hi), lo, hi, nullptr});
    return *this;
  }
  // A decimal number (strtod) in [lo, hi].
  Args& Real(const char* name, double* value, double lo, double hi) {
    keys_.push_back({name, Kind::kReal, nullptr, value, nullptr, lo, hi, 0, 0, nullptr});
    return *this;
  }
  // One of `choices` ("a|b|c").
  Args& Choice(const char* name, std::string* value, const char* choices) {
    keys_.push_back({name, Kind::kChoice, nullptr, nullptr, value, 0, 0, 0, 0, choices});
    return *this;
  }
  // Any non-empty text (a file name).
  Args& Text(const char* name, std::string* value) {
    keys_.push_back({name, Kind::kText, nullptr, nullptr, value, 0, 0, 0, 0, nullptr});
    return *this;
  }

  // argv[1..]: true, or false after printing "APP: bad argument ..." with
  // what every key accepts.
  bool Parse(int argc, char** argv) const {
    for (int i = 1; i < argc; ++i) {
      if (!ParseOne(argv[i])) {
        std::printf("%s: bad argument '%s': expected %s\n", app_, argv[i], Usage().c_str());
        return false;
      }
    }
    return true;
  }

  std::string Usage() const {
    std::string out;
    for (size_t i = 0; i < keys_.size(); ++i) {
      const Key& k = keys_[i];
      out += i == 0 ? "" : (i + 1 == keys_.size() ? " or " : ", ");
      out += std::string(k.name) + "=";
      char range[96];
      switch (k.kind) {
        case Kind::kUInt: std::snprintf(range, sizeof range, "N (%" PRIu64 "..%" PRIu64 ")", k.ulo, k.uhi); break;
        case Kind::kReal: std::snprintf(range, sizeof range, "X (%g..%g)", k.lo, k.hi); break;
        case Kind::kChoice: std::snprintf(range, sizeof range, "%s", k.choices); break;
        case Kind::kText: std::snprintf(range, sizeof range, "TEXT"); break;
      }
      out += range;
    }
    return out;
  }

 private:
  enum class Kind { kUInt, kReal, kChoice, kText };
  struct Key {
    const char* name;
    Kind kind;
    uint64_t* u;
    double* d;
    std::string* s;
    double lo, hi;
    uint64_t ulo, uhi;
    const char* choices;
  };

  bool ParseOne(const char* arg) const {
    const char* eq = std::strchr(arg, '=');
    if (eq == nullptr) return false;
    const Key* key = nullptr;
    for (const Key& k : keys_) {
      if (size_t(eq - arg) == std::strlen(k.name) && std::strncmp(arg, k.name, size_t(eq - arg)) == 0) key = &k;
    }
    if (key == nullptr) return false;
    const char* text = eq + 1;
    char* end = nullptr;
    errno = 0;
    switch (key->kind) {
      case Kind::kUInt: {
        if (*text < '0' || *text > '9') return false;
        unsigned long long v = std::strtoull(text, &end, 10);
        if (*end != '\0' || errno != 0 || v < key->ulo || v > key->uhi) return false;
        *key->u = v;
        return true;
      }
      case Kind::kReal: {
        if (*text == '\0') return false;
        double v = std::strtod(text, &end);
        if (*end != '\0' || errno != 0 || !std::isfinite(v) || v < key->lo || v > key->hi) return false;
        *key->d = v;
        return true;
      }
      case Kind::kChoice: {
        std::string all = key->choices;
        size_t at = 0;
        while (at <= all.size()) {
          size_t bar = all.find('|', at);
          std::string choice = all.substr(at, bar == std::string::npos ? std::string::npos : bar - at);
          if (choice == text) {
            *key->s = choice;
            return true;
          }
          at = bar == std::string::npos ? all.size() + 1 : bar + 1;
        }
        return false;
      }
      case Kind::kText:
        if (*text == '\0') return false;
        *key->s = text;
        return true;
    }
    return false;
  }

  const char* app_;
  std::vector<Key> keys_;
};

}  // namespace fox::apps
