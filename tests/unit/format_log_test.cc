#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "fox/format.h"
#include "fox/log.h"

namespace fox::testing {
extern std::string g_console;
}

namespace fox {
namespace {

// Our formatter must agree with the C library wherever both are defined.
template <typename... Args>
void ExpectLikeLibc(const char* fmt, Args... args) {
  char ours[128], libc[128];
  size_t n = Format(ours, sizeof ours, fmt, args...);
  int m = std::snprintf(libc, sizeof libc, fmt, args...);
  EXPECT_STREQ(ours, libc) << "format " << fmt;
  EXPECT_EQ(n, size_t(m)) << "format " << fmt;
}

TEST(Format, MatchesLibc) {
  ExpectLikeLibc("%d %i %u", -42, 17, 4000000000u);
  ExpectLikeLibc("%5d|%-5d|%05d|%+d|% d", 42, 42, 42, 42, 42);
  ExpectLikeLibc("%x %X %#x %o %#o", 0xbeefu, 0xbeefu, 0xbeefu, 8u, 8u);
  ExpectLikeLibc("%lld %llu %llx", (long long)INT64_MIN, (unsigned long long)UINT64_MAX, 0x123456789abcull);
  ExpectLikeLibc("%zu %zd %ld", size_t(12345), ssize_t(-5), -77L);
  ExpectLikeLibc("%hhu %hd", 300, 70000);
  ExpectLikeLibc("%s|%10s|%-10s|%.2s|%.*s", "abc", "abc", "abc", "abc", 1, "abc");
  ExpectLikeLibc("%c%c %%", 'o', 'k');
  ExpectLikeLibc("%*d|%-*d", 6, 1, 6, 2);
  ExpectLikeLibc("%.3d|%8.3d", 7, 7);
  ExpectLikeLibc("%p", reinterpret_cast<void*>(0x1234));
  ExpectLikeLibc("%#018llx", 0xabcull);
  // Signs, padding and precision together.
  ExpectLikeLibc("%05d|%-6d|%+05d|% 5d|%+.3d|%-+8.4d|%08.3d", -42, -42, 42, -7, 5, -5, 9);
  ExpectLikeLibc("%hhd %hd %hhx %hx %d", 200, 40000, -1, -1, INT32_MIN);
  ExpectLikeLibc("%ld %lu %lx %zx %td", INT64_MIN, (unsigned long)UINT64_MAX, -1L, size_t(255), ptrdiff_t(-3));
  ExpectLikeLibc("%.0d|%.0u|%5.0d|%#.0o|%#o|%#x|%#X|%#5o", 0, 0u, 0, 0u, 0u, 0u, 0xabu, 9u);
  ExpectLikeLibc("%-5c|%5c|%3s|%-3s|%.0s|%*s|%-*s", 'a', 'b', "toolong", "x", "gone", -4, "l", 3, "r");
  ExpectLikeLibc("%.*s|%.*d", -1, "all", -1, 12);
  ExpectLikeLibc("%u %o %x %X", 0u, 0u, UINT32_MAX, UINT32_MAX);
  ExpectLikeLibc("%#.5o|%#.2o|%#5.0o|%#08o", 8u, 8u, 0u, 8u);
  ExpectLikeLibc("100%% %s%%", "sure");
}

// Random specifications (flags, width, precision, length, conversion) with
// random values, against the C library: a mistake in one combination of
// flags, width, precision and length shows here where the cases above miss it.
TEST(Format, RandomSpecificationsMatchLibc) {
  uint64_t seed = 0x9E3779B97F4A7C15ull;
  auto next = [&seed] {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    return seed;
  };
  const char* kFlagChars = "-0+ #";
  const char* kLengths[] = {"", "hh", "h", "l", "ll", "z", "j", "t"};
  const char* kConversions = "diuxXo";
  for (int round = 0; round < 20000; ++round) {
    std::string spec = "<%";
    for (int i = int(next() % 3); i > 0; --i) spec += kFlagChars[next() % 5];
    if (next() % 2) spec += std::to_string(next() % 25);
    if (next() % 2) spec += "." + std::to_string(next() % 25);
    size_t length = next() % 8;
    spec += kLengths[length];
    char conv = kConversions[next() % 6];
    spec += conv;
    spec += ">";
    uint64_t v = next();
    if (next() % 4 == 0) v %= 1000;
    if (next() % 8 == 0) v = 0;
    char ours[128], libc[128];
    size_t n;
    int m;
    if (length >= 3) {  // a 64-bit argument
      n = Format(ours, sizeof ours, spec.c_str(), v);
      m = std::snprintf(libc, sizeof libc, spec.c_str(), v);
    } else {
      n = Format(ours, sizeof ours, spec.c_str(), unsigned(v));
      m = std::snprintf(libc, sizeof libc, spec.c_str(), unsigned(v));
    }
    ASSERT_STREQ(ours, libc) << "format " << spec << " value " << v;
    ASSERT_EQ(n, size_t(m)) << "format " << spec;
  }
}

TEST(Format, TruncatesSafely) {
  char buf[8];
  size_t n = Format(buf, sizeof buf, "%s", "0123456789");
  EXPECT_EQ(n, 10u);
  EXPECT_STREQ(buf, "0123456");
  EXPECT_EQ(Format(nullptr, 0, "%d", 12345), 5u);
  char one[1];
  Format(one, 1, "abc");
  EXPECT_STREQ(one, "");
  Format(buf, sizeof buf, "%s", static_cast<const char*>(nullptr));
  EXPECT_STREQ(buf, "(null)");
  Format(buf, sizeof buf, "%q%");  // unknown conversion, trailing %
  EXPECT_STREQ(buf, "%q");
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wformat-invalid-specifier"
  Format(buf, sizeof buf, "a%-5kb");  // flags and width before an unknown conversion: dropped
#pragma clang diagnostic pop
  EXPECT_STREQ(buf, "a%kb");
}

TEST(Log, LevelsFilterAndLinesAreComplete) {
  testing::g_console.clear();
  SetLogLevel(LogLevel::kWarn);
  LOG_INFO("hidden %d", 1);
  LOG_WARN("shown %d", 2);
  LOG_ERROR("also shown");
  EXPECT_EQ(testing::g_console.find("hidden"), std::string::npos);
  EXPECT_NE(testing::g_console.find("] W shown 2\n"), std::string::npos) << testing::g_console;
  EXPECT_NE(testing::g_console.find("] E also shown\n"), std::string::npos);
  EXPECT_NE(testing::g_console.find("[ 1234.567890]"), std::string::npos) << testing::g_console;
  SetLogLevel(LogLevel::kInfo);
}

TEST(Log, LongLinesAreTruncatedWithMarker) {
  testing::g_console.clear();
  std::string big(2000, 'x');
  Log(LogLevel::kError, "%s", big.c_str());
  EXPECT_EQ(testing::g_console.size(), kMaxLogLine - 1);
  EXPECT_EQ(testing::g_console.substr(testing::g_console.size() - 4), "...\n");
}

TEST(Log, ParseLevel) {
  EXPECT_EQ(*ParseLogLevel("debug"), LogLevel::kDebug);
  EXPECT_EQ(*ParseLogLevel("error"), LogLevel::kError);
  EXPECT_FALSE(ParseLogLevel("DEBUG").ok());
  EXPECT_FALSE(ParseLogLevel("").ok());
}

}  // namespace
}  // namespace fox
