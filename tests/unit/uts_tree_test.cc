// UTS's trees (apps/uts/uts_tree.h) and its SHA-1 (apps/uts/sha1.h): the
// hash's test vectors, the benchmark's published count for T1, and work
// split between searches counted once.
#include "../../apps/uts/uts_tree.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace {

using namespace fox::apps::uts;

std::string Hex(const Digest& d) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (uint8_t b : d) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

TEST(Sha1, Fips180Vectors) {
  EXPECT_EQ(Hex(Sha1Of("abc", 3)), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(Hex(Sha1Of("", 0)), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  const char* two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(Hex(Sha1Of(two_blocks, std::strlen(two_blocks))), "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  Sha1 million;  // a million 'a's, fed in uneven pieces
  std::string piece(997, 'a');
  size_t left = 1'000'000;
  while (left > 0) {
    size_t n = std::min(left, piece.size());
    million.Update(piece.data(), n);
    left -= n;
  }
  EXPECT_EQ(Hex(million.Final()), "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

// UTS's T1 family cut at `depth` (seed 19), and its node count by one search.
Tree T1(uint32_t depth) {
  Tree t;
  t.depth = depth;
  t.seed = 19;
  return t;
}
uint64_t CountAlone(const Tree& tree) {
  Search s(tree);
  s.SeedRoot();
  while (s.process(4096)) {
  }
  return s.result();
}

TEST(UtsTree, T1HasTheBenchmarksCount) {
  EXPECT_EQ(CountAlone(T1(10)), 4130071u);  // UTS's table: T1, 4,130,071 nodes
}

TEST(UtsTree, SplitWorkIsCountedOnce) {
  Tree small = T1(7);
  uint64_t alone = CountAlone(small);
  // Two searches passing halves back and forth every few items.
  Search a(small), b(small);
  a.SeedRoot();
  int gives = 0;
  for (bool more = true; more;) {
    bool ma = a.process(37), mb = b.process(53);
    if (auto loot = a.split()) b.merge(std::move(*loot)), ++gives;
    if (auto loot = b.split()) a.merge(std::move(*loot)), ++gives;
    more = ma || mb || !a.empty() || !b.empty();
  }
  EXPECT_GT(gives, 10);
  EXPECT_EQ(a.result() + b.result(), alone);
  EXPECT_GT(alone, 1000u);
}

}  // namespace
