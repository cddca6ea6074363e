#include "x86_64/multiboot.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

namespace fox::boot {
namespace {

// A fake stretch of physical memory at kBase in which tests lay out what a
// boot loader would.
constexpr uint64_t kBase = 0x10000;

class Memory {
 public:
  Memory() : bytes_(0x10000, 0) {}
  template <typename T>
  void Put(uint64_t phys, const T& value) {
    std::memcpy(&bytes_[phys - kBase], &value, sizeof value);
  }
  void PutBytes(uint64_t phys, const void* p, size_t n) { std::memcpy(&bytes_[phys - kBase], p, n); }
  void PutString(uint64_t phys, const std::string& s) { PutBytes(phys, s.c_str(), s.size() + 1); }
  PhysWindow Window() const { return PhysWindow{bytes_.data(), kBase, bytes_.size()}; }
  std::vector<uint8_t> bytes_;
};

struct Mb1Info {
  uint32_t flags, mem_lower, mem_upper, boot_device, cmdline, mods_count, mods_addr;
  uint32_t syms[4];
  uint32_t mmap_length, mmap_addr;
  uint32_t drives_length, drives_addr, config_table, boot_loader_name;
};
struct __attribute__((packed)) Mb1Mmap {
  uint32_t size;
  uint64_t base, length;
  uint32_t type;
};

Memory GoodMb1(uint32_t mmap_entries = 3) {
  Memory m;
  Mb1Info info{};
  info.flags = (1 << 2) | (1 << 6) | (1 << 9);
  info.cmdline = 0x11000;
  info.boot_loader_name = 0x11800;
  info.mmap_addr = 0x12000;
  info.mmap_length = mmap_entries * sizeof(Mb1Mmap);
  m.Put(0x10000, info);
  m.PutString(0x11000, "/fox.elf fox.log=debug -- x");
  m.PutString(0x11800, "qemu");
  Mb1Mmap e[3] = {{20, 0, 0x9fc00, 1}, {20, 0x100000, 0x7ee0000, 1}, {20, 0xfffc0000, 0x40000, 2}};
  for (uint32_t i = 0; i < mmap_entries && i < 3; ++i) m.Put(0x12000 + i * sizeof(Mb1Mmap), e[i]);
  return m;
}

TEST(Multiboot1, ParsesCommandLineLoaderAndMemoryMap) {
  Memory m = GoodMb1();
  BootInfo info;
  char error[128];
  ASSERT_TRUE(ParseBootInfo(kMultiboot1Magic, 0x10000, m.Window(), &info, error, sizeof error).ok()) << error;
  EXPECT_EQ(info.protocol, 1);
  EXPECT_TRUE(info.cmdline_has_image);
  EXPECT_STREQ(info.cmdline, "/fox.elf fox.log=debug -- x");
  EXPECT_STREQ(info.loader, "qemu");
  ASSERT_EQ(info.num_regions, 3u);
  EXPECT_EQ(info.regions[1].base, 0x100000u);
  EXPECT_EQ(info.regions[1].length, 0x7ee0000u);
  EXPECT_EQ(info.regions[1].type, MemoryType::kUsable);
  EXPECT_EQ(info.regions[2].type, MemoryType::kReserved);
}

TEST(Multiboot1, RejectsMalformedStructures) {
  BootInfo info;
  char error[128];
  {
    Memory m = GoodMb1();
    EXPECT_FALSE(ParseBootInfo(kMultiboot1Magic, 0x90000, m.Window(), &info, error, sizeof error).ok());
    EXPECT_NE(std::string(error).find("outside memory"), std::string::npos) << error;
  }
  {
    Memory m = GoodMb1();
    m.Put(0x10000 + 4 * 11, uint32_t(0x1FFF0));  // mmap_addr near the end of memory
    EXPECT_FALSE(ParseBootInfo(kMultiboot1Magic, 0x10000, m.Window(), &info, error, sizeof error).ok());
  }
  {
    Memory m = GoodMb1();
    m.Put(0x12000, uint32_t(3));  // entry size too small to hold an entry
    EXPECT_FALSE(ParseBootInfo(kMultiboot1Magic, 0x10000, m.Window(), &info, error, sizeof error).ok());
    EXPECT_NE(std::string(error).find("memory map entry size"), std::string::npos) << error;
  }
  {
    Memory m = GoodMb1();
    std::string endless(0x5000, 'a');  // no NUL within the window after the command line
    m.PutBytes(0x11000, endless.data(), endless.size());
    m.bytes_.resize(0x11000 - kBase + 0x5000);
    EXPECT_FALSE(ParseBootInfo(kMultiboot1Magic, 0x10000, m.Window(), &info, error, sizeof error).ok());
    EXPECT_NE(std::string(error).find("command line"), std::string::npos) << error;
  }
  {
    Memory m = GoodMb1();
    m.Put(0x10000, uint32_t(1 << 2));  // no memory map flag
    EXPECT_FALSE(ParseBootInfo(kMultiboot1Magic, 0x10000, m.Window(), &info, error, sizeof error).ok());
    EXPECT_NE(std::string(error).find("no memory map"), std::string::npos) << error;
  }
  {
    Memory m = GoodMb1();
    Mb1Mmap wrap{20, ~0ull - 10, 100, 1};
    m.Put(0x12000, wrap);
    EXPECT_FALSE(ParseBootInfo(kMultiboot1Magic, 0x10000, m.Window(), &info, error, sizeof error).ok());
    EXPECT_NE(std::string(error).find("wraps"), std::string::npos) << error;
  }
}

TEST(Multiboot, UnknownMagic) {
  Memory m;
  BootInfo info;
  char error[128];
  auto r = ParseBootInfo(0x12345678, 0x10000, m.Window(), &info, error, sizeof error);
  EXPECT_EQ(r.error(), Error::kUnsupported);
  EXPECT_NE(std::string(error).find("not started by a multiboot loader"), std::string::npos);
}

// Builds a multiboot2 information structure tag by tag.
class Mb2Builder {
 public:
  Mb2Builder() { bytes_.resize(8); }
  void Tag(uint32_t type, const std::vector<uint8_t>& body) {
    uint32_t header[2] = {type, uint32_t(8 + body.size())};
    Append(header, 8);
    Append(body.data(), body.size());
    while (bytes_.size() % 8) bytes_.push_back(0);
  }
  std::vector<uint8_t> Finish(bool end_tag = true) {
    if (end_tag) Tag(0, {});
    uint32_t total = uint32_t(bytes_.size());
    std::memcpy(bytes_.data(), &total, 4);
    return bytes_;
  }
  void Append(const void* p, size_t n) { bytes_.insert(bytes_.end(), (const uint8_t*)p, (const uint8_t*)p + n); }

 private:
  std::vector<uint8_t> bytes_;
};

std::vector<uint8_t> StringBody(const std::string& s) {
  std::vector<uint8_t> v(s.begin(), s.end());
  v.push_back(0);
  return v;
}

std::vector<uint8_t> MmapBody(std::vector<std::array<uint64_t, 3>> entries, uint32_t entry_size = 24) {
  std::vector<uint8_t> v(8);
  std::memcpy(v.data(), &entry_size, 4);
  for (auto& e : entries) {
    std::vector<uint8_t> entry(entry_size < 24 ? 24 : entry_size, 0);
    uint32_t type = uint32_t(e[2]);
    std::memcpy(entry.data(), &e[0], 8);
    std::memcpy(entry.data() + 8, &e[1], 8);
    std::memcpy(entry.data() + 16, &type, 4);
    v.insert(v.end(), entry.begin(), entry.begin() + entry_size);
  }
  return v;
}

BootInfo ParseMb2(const std::vector<uint8_t>& mbi, Result<void>* result, std::string* error_out) {
  Memory m;
  m.PutBytes(0x10000, mbi.data(), mbi.size());
  BootInfo info;
  char error[128];
  *result = ParseBootInfo(kMultiboot2Magic, 0x10000, m.Window(), &info, error, sizeof error);
  *error_out = error;
  return info;
}

TEST(Multiboot2, ParsesTags) {
  Mb2Builder b;
  b.Tag(1, StringBody("fox.log=warn -- hi"));
  b.Tag(2, StringBody("GRUB 2.06"));
  b.Tag(6, MmapBody({{0, 0x9fc00, 1}, {0x100000, 0x3ff00000, 1}, {0xfee00000, 0x1000, 2}}));
  std::vector<uint8_t> rsdp(36, 0);
  std::memcpy(rsdp.data(), "RSD PTR ", 8);
  b.Tag(15, rsdp);
  b.Tag(99, {1, 2, 3});  // unknown tags are skipped
  Result<void> r;
  std::string error;
  BootInfo info = ParseMb2(b.Finish(), &r, &error);
  ASSERT_TRUE(r.ok()) << error;
  EXPECT_EQ(info.protocol, 2);
  EXPECT_FALSE(info.cmdline_has_image);
  EXPECT_STREQ(info.cmdline, "fox.log=warn -- hi");
  EXPECT_STREQ(info.loader, "GRUB 2.06");
  ASSERT_EQ(info.num_regions, 3u);
  EXPECT_EQ(info.regions[1].length, 0x3ff00000u);
  EXPECT_TRUE(info.has_rsdp_copy);
  EXPECT_EQ(std::memcmp(info.rsdp_copy, "RSD PTR ", 8), 0);
}

TEST(Multiboot2, RejectsMalformedStructures) {
  Result<void> r;
  std::string error;
  {
    Mb2Builder b;
    b.Tag(6, MmapBody({{0x100000, 0x1000000, 1}}));
    ParseMb2(b.Finish(false), &r, &error);  // no end tag
    EXPECT_FALSE(r.ok());
    EXPECT_NE(error.find("end tag"), std::string::npos) << error;
  }
  {
    Mb2Builder b;
    b.Tag(1, StringBody("x"));
    ParseMb2(b.Finish(), &r, &error);  // no memory map
    EXPECT_FALSE(r.ok());
    EXPECT_NE(error.find("no memory map"), std::string::npos) << error;
  }
  {
    Mb2Builder b;
    b.Tag(6, MmapBody({{0x100000, 0x1000000, 1}}, 12));  // entry size below 24
    ParseMb2(b.Finish(), &r, &error);
    EXPECT_FALSE(r.ok());
  }
  {
    Mb2Builder b;
    b.Tag(6, MmapBody({{0x100000, 0x1000000, 1}}));
    auto bytes = b.Finish();
    uint32_t huge_tag = 0x7fffffff;
    std::memcpy(bytes.data() + 12, &huge_tag, 4);  // tag size beyond the structure
    ParseMb2(bytes, &r, &error);
    EXPECT_FALSE(r.ok());
    EXPECT_NE(error.find("tag size"), std::string::npos) << error;
  }
  {
    Mb2Builder b;
    b.Tag(1, {'n', 'o', 'n', 'u', 'l'});  // unterminated command line
    b.Tag(6, MmapBody({{0x100000, 0x1000000, 1}}));
    ParseMb2(b.Finish(), &r, &error);
    EXPECT_FALSE(r.ok());
    EXPECT_NE(error.find("command line"), std::string::npos) << error;
  }
  {
    std::vector<uint8_t> tiny = {4, 0, 0, 0, 0, 0, 0, 0};  // total size below the minimum
    ParseMb2(tiny, &r, &error);
    EXPECT_FALSE(r.ok());
  }
  {
    Memory m;
    BootInfo info;
    char err[128];
    EXPECT_FALSE(ParseBootInfo(kMultiboot2Magic, 0x10004, m.Window(), &info, err, sizeof err).ok());  // misaligned
  }
}

TEST(Multiboot2, TooManyRegions) {
  std::vector<std::array<uint64_t, 3>> many;
  for (uint64_t i = 0; i < BootInfo::kMaxRegions + 1; ++i) many.push_back({i * 0x1000, 0x1000, 1});
  Mb2Builder b;
  b.Tag(6, MmapBody(many));
  Result<void> r;
  std::string error;
  ParseMb2(b.Finish(), &r, &error);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(error.find("too many"), std::string::npos) << error;
}

}  // namespace
}  // namespace fox::boot
