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
