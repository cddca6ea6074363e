#include "fox/cmdline.h"

#include <gtest/gtest.h>

#include <cstring>
#include <span>
#include <string>

namespace fox {
namespace {

// The parser is tested against a table of its own: which keys a program
// accepts is the layers' business (each registers its own: FOX_BOOT_ARG),
// checked where every layer is linked (vm test bad_boot_arg).
const BootArgSpec kSpecs[] = {
    {"fox.log", BootArgKind::kEnum, "debug|info|warn|error", 0, 0, "console log level"},
    {"fox.stack", BootArgKind::kSize, nullptr, 64 << 10, 1ull << 30, "stack size"},
    {"fox.ip", BootArgKind::kIpv4Prefix, nullptr, 0, 0, "address"},
    {"fox.gw", BootArgKind::kIpv4, nullptr, 0, 0, "gateway"},
    {"fox.kcores", BootArgKind::kUInt, nullptr, 1, 256, "kernel cores"},
};

TEST(CommandLine, SplitsKernelAndApplicationArguments) {
  CommandLine c;
  ASSERT_TRUE(c.Parse("/boot/fox.elf fox.log=debug fox.stack=2M -- one \"two words\" three", true, kSpecs).ok());
  EXPECT_STREQ(c.Get("fox.log"), "debug");
  EXPECT_EQ(c.GetNumber("fox.stack", 0), 2u << 20);
  ASSERT_EQ(c.argc(), 4);
  EXPECT_STREQ(c.argv()[0], "/boot/fox.elf");
  EXPECT_STREQ(c.argv()[1], "one");
  EXPECT_STREQ(c.argv()[2], "two words");
  EXPECT_STREQ(c.argv()[3], "three");
  EXPECT_EQ(c.argv()[4], nullptr);
  EXPECT_EQ(c.Get("fox.other"), nullptr);
  EXPECT_EQ(c.GetNumber("fox.missing", 77), 77u);
}

TEST(CommandLine, EmptyAndImageOnly) {
  CommandLine c;
  ASSERT_TRUE(c.Parse("", false, kSpecs).ok());
  EXPECT_EQ(c.argc(), 1);
  EXPECT_STREQ(c.argv()[0], "fox");
  ASSERT_TRUE(c.Parse("   /fox.elf   ", true, kSpecs).ok());
  EXPECT_EQ(c.argc(), 1);
  EXPECT_STREQ(c.argv()[0], "/fox.elf");
  EXPECT_EQ(c.num_args(), 0u);
  ASSERT_TRUE(c.Parse("-- a", true, kSpecs).ok());  // no image name given
  ASSERT_EQ(c.argc(), 2);
  EXPECT_STREQ(c.argv()[1], "a");
}

TEST(CommandLine, Ipv4Arguments) {
  CommandLine c;
  ASSERT_TRUE(c.Parse("fox.ip=10.0.2.15/24 fox.gw=10.0.2.2", false, kSpecs).ok());
  EXPECT_STREQ(c.Get("fox.ip"), "10.0.2.15/24");
  EXPECT_STREQ(c.Get("fox.gw"), "10.0.2.2");
  EXPECT_TRUE(c.Parse("fox.ip=0.0.0.0/0 fox.gw=255.255.255.255", false, kSpecs).ok());
  EXPECT_TRUE(c.Parse("fox.ip=192.168.100.200/32", false, kSpecs).ok());
}

TEST(CommandLine, ArgumentsAfterDashDashAreNotKernelArguments) {
  CommandLine c;
  ASSERT_TRUE(c.Parse("-- fox.log=nonsense --", false, kSpecs).ok());
  EXPECT_EQ(c.Get("fox.log"), nullptr);
  ASSERT_EQ(c.argc(), 3);
  EXPECT_STREQ(c.argv()[1], "fox.log=nonsense");
  EXPECT_STREQ(c.argv()[2], "--");
}

struct BadCase {
  const char* text;
  const char* message;
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << '"' << c.text << '"'; }

class CommandLineErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(CommandLineErrors, FailWithAClearMessage) {
  CommandLine c;
  auto r = c.Parse(GetParam().text, false, kSpecs);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), Error::kInvalidArgument);
  EXPECT_NE(std::string(c.error()).find(GetParam().message), std::string::npos) << c.error();
  EXPECT_EQ(c.num_args(), 0u);  // a failed parse leaves nothing half-applied
}

INSTANTIATE_TEST_SUITE_P(
    All, CommandLineErrors,
    ::testing::Values(
        BadCase{"fox.bogus=1",
                "unknown boot argument 'fox.bogus' (known: fox.gw, fox.ip, fox.kcores, fox.log, fox.stack)"},
        BadCase{"fox.log=loud", "bad boot argument 'fox.log=loud': expected one of debug|info|warn|error"},
        BadCase{"fox.log", "has no value"}, BadCase{"fox.log=", "needs a value"},
        BadCase{"fox.log=info fox.log=debug", "given twice"}, BadCase{"fox.stack=12Q", "expected a size"},
        BadCase{"fox.stack=1K", "from 65536 to 1073741824"},
        BadCase{"fox.stack=99999999999999999999999", "expected a size"}, BadCase{"fox.stack=-5", "expected a size"},
        BadCase{"console=ttyS0", "unexpected boot argument 'console=ttyS0'"},
        BadCase{"fox.log=\"info", "unterminated quote"},
        BadCase{"fox.ip=10.0.2.15", "'fox.ip=10.0.2.15': expected an IPv4 address and prefix length, A.B.C.D/NN"},
        BadCase{"fox.ip=10.0.2.256/24", "expected an IPv4 address and prefix length"},
        BadCase{"fox.ip=10.0.2.1/33", "expected an IPv4 address and prefix length"},
        BadCase{"fox.ip=10.0.2.1/", "expected an IPv4 address and prefix length"},
        BadCase{"fox.ip=10.0.2/24", "expected an IPv4 address and prefix length"},
        BadCase{"fox.gw=1.2.3", "'fox.gw=1.2.3': expected an IPv4 address, A.B.C.D"},
        BadCase{"fox.gw=1.2.3.4.5", "expected an IPv4 address"}, BadCase{"fox.gw=1..3.4", "expected an IPv4 address"},
        BadCase{"fox.gw=01234.1.1.1", "expected an IPv4 address"}));

TEST(CommandLine, RejectsOversizedInput) {
  CommandLine c;
  std::string huge(CommandLine::kMaxText + 1, 'a');
  EXPECT_FALSE(c.Parse(huge, false, kSpecs).ok());
  std::string many = "--";
  for (int i = 0; i < 300; ++i) many += " x";
  EXPECT_FALSE(c.Parse(many, false, kSpecs).ok());
  EXPECT_NE(std::string(c.error()).find("too many"), std::string::npos) << c.error();
  std::string nul("fox.log=info\0x", 14);
  EXPECT_FALSE(c.Parse(nul, false, kSpecs).ok());
}

TEST(CommandLine, ReusableAfterAnError) {
  CommandLine c;
  EXPECT_FALSE(c.Parse("fox.nope=1", false, kSpecs).ok());
  ASSERT_TRUE(c.Parse("fox.log=warn", false, kSpecs).ok());
  EXPECT_STREQ(c.Get("fox.log"), "warn");
}

// The registered table (the kernel's keys here: the unit tests link the
// kernel's common sources) has each key once, and Parse takes it by default.
TEST(CommandLine, RegisteredKeysAreUniqueAndParsedByDefault) {
  std::span<const BootArgSpec> specs = BootArgSpecs();
  ASSERT_GE(specs.size(), 6u);
  for (size_t i = 0; i < specs.size(); ++i) {
    EXPECT_EQ(std::strncmp(specs[i].key, "fox.", 4), 0) << specs[i].key;
    for (size_t j = i + 1; j < specs.size(); ++j) EXPECT_STRNE(specs[i].key, specs[j].key);
  }
  CommandLine c;
  ASSERT_TRUE(c.Parse("fox.log=warn fox.kcores=2 fox.smp_deaf=1", false).ok()) << c.error();
  EXPECT_FALSE(c.Parse("fox.bogus=1", false).ok());
  bool stack_is_boot_time = false;
  for (const BootArgSpec& s : specs) stack_is_boot_time |= std::strcmp(s.key, "fox.stack") == 0 && s.boot_time;
  EXPECT_TRUE(stack_is_boot_time);
}

TEST(ParseSize, Suffixes) {
  EXPECT_EQ(*ParseSize("123"), 123u);
  EXPECT_EQ(*ParseSize("4k"), 4096u);
  EXPECT_EQ(*ParseSize("3M"), 3u << 20);
  EXPECT_EQ(*ParseSize("2G"), 2ull << 30);
  EXPECT_EQ(ParseSize("").error(), Error::kInvalidArgument);
  EXPECT_EQ(ParseSize("G").error(), Error::kInvalidArgument);
  EXPECT_EQ(ParseSize("18446744073709551615G").error(), Error::kOutOfRange);
  EXPECT_EQ(ParseUInt("18446744073709551616").error(), Error::kOutOfRange);
  EXPECT_EQ(*ParseUInt("18446744073709551615"), UINT64_MAX);
}

}  // namespace
}  // namespace fox
