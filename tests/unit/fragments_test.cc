// Large-message reassembly (ebb/include/fox/ebb/fragments.h): whole
// messages from interleaved fragments, limits, malformed fragments, death.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "fox/ebb/fragments.h"

namespace fox::ebb {
namespace {

struct Got {
  uint32_t from, ebb;
  uint16_t handler;
  std::vector<uint8_t> data;
};

class ReassemblerTest : public ::testing::Test {
 protected:
  Reassembler Make(size_t max_message = 1 << 20, size_t max_partial = 4 << 20) {
    return Reassembler(
        max_message, max_partial,
        [this](uint32_t from, EbbId ebb, HandlerId handler, std::vector<uint8_t> data) {
          got.push_back({from, Raw(ebb), Raw(handler), std::move(data)});
        },
        [this](uint32_t, const char* why) { drops.push_back(why); });
  }
  // The fragments of a message, `chunk` bytes each.
  static std::vector<std::vector<uint8_t>> Cut(uint64_t id, uint32_t ebb, uint16_t handler,
                                               const std::vector<uint8_t>& data, size_t chunk) {
    std::vector<std::vector<uint8_t>> out;
    size_t offset = 0;
    do {
      size_t n = std::min(chunk, data.size() - offset);
      std::vector<uint8_t> f(kFragmentHeaderBytes + n);
      EncodeFragmentHeader(f.data(), id, EbbId{ebb}, HandlerId{handler}, uint32_t(data.size()), uint32_t(offset));
      if (n != 0) std::memcpy(f.data() + kFragmentHeaderBytes, data.data() + offset, n);
      out.push_back(std::move(f));
      offset += n;
    } while (offset < data.size());
    return out;
  }
  static std::vector<uint8_t> Bytes(size_t n, int seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = uint8_t(i * 7 + seed);
    return v;
  }
  std::vector<Got> got;
  std::vector<std::string> drops;
};

TEST_F(ReassemblerTest, InterleavedMessagesFromTwoNodesArriveWhole) {
  Reassembler r = Make();
  auto a = Bytes(10000, 1), b = Bytes(3000, 2), c = Bytes(0, 3);
  auto fa = Cut(7, 100, 1, a, 1384), fb = Cut(7, 101, 2, b, 1384), fc = Cut(8, 100, 3, c, 1384);
  ASSERT_EQ(fc.size(), 1u);  // an empty message is one empty fragment
  for (size_t i = 0; i < fa.size(); ++i) {
    r.OnFragment(1, fa[i].data(), fa[i].size());                     // node 1, message 7
    if (i < fb.size()) r.OnFragment(2, fb[i].data(), fb[i].size());  // node 2, also message 7
    if (i == 2) r.OnFragment(1, fc[0].data(), fc[0].size());
  }
  ASSERT_EQ(got.size(), 3u);  // in the order their last fragments came
  EXPECT_EQ(got[0].from, 2u);
  EXPECT_EQ(got[0].ebb, 101u);
  EXPECT_EQ(got[0].data, b);
  EXPECT_EQ(got[1].from, 1u);
  EXPECT_TRUE(got[1].data.empty());
  EXPECT_EQ(got[1].handler, 3);
  EXPECT_EQ(got[2].from, 1u);
  EXPECT_EQ(got[2].data, a);
  EXPECT_TRUE(drops.empty());
  EXPECT_EQ(r.partial_bytes(), 0u);
  EXPECT_EQ(r.partial_messages(), 0u);
}

TEST_F(ReassemblerTest, LimitsDropWholeMessagesQuietly) {
  Reassembler r = Make(/*max_message=*/5000, /*max_partial=*/8000);
  auto big = Cut(1, 9, 1, Bytes(6000, 0), 1000);
  for (auto& f : big) r.OnFragment(1, f.data(), f.size());
  ASSERT_EQ(drops.size(), 1u);  // said once, the rest swallowed
  EXPECT_EQ(drops[0], "longer than the largest message");
  EXPECT_EQ(r.partial_messages(), 0u);
  // Two unfinished 4000-byte messages fit; a third does not.
  auto m1 = Cut(2, 9, 1, Bytes(4000, 1), 1000), m2 = Cut(3, 9, 1, Bytes(4000, 2), 1000),
       m3 = Cut(4, 9, 1, Bytes(4000, 3), 1000);
  r.OnFragment(1, m1[0].data(), m1[0].size());
  r.OnFragment(1, m2[0].data(), m2[0].size());
  r.OnFragment(1, m3[0].data(), m3[0].size());
  EXPECT_EQ(drops.back(), "reassembly memory is full");
  EXPECT_EQ(r.partial_bytes(), 8000u);
  for (size_t i = 1; i < 4; ++i) {
    r.OnFragment(1, m1[i].data(), m1[i].size());
    r.OnFragment(1, m2[i].data(), m2[i].size());
    r.OnFragment(1, m3[i].data(), m3[i].size());
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].data, Bytes(4000, 1));
  EXPECT_EQ(got[1].data, Bytes(4000, 2));
  EXPECT_EQ(drops.size(), 2u);
  EXPECT_EQ(r.partial_bytes(), 0u);
}

TEST_F(ReassemblerTest, MalformedFragmentsAreDroppedAndSaid) {
  Reassembler r = Make();
  auto m = Cut(5, 9, 1, Bytes(5000, 4), 1000);
  r.OnFragment(1, m[0].data(), 10);           // shorter than a header
  r.OnFragment(1, m[1].data(), m[1].size());  // start never came
  r.OnFragment(1, m[0].data(), m[0].size());
  r.OnFragment(1, m[2].data(), m[2].size());  // skips m[1]: out of place, message dropped
  r.OnFragment(1, m[3].data(), m[3].size());  // start never came (any more)
  auto reserved = m[0];
  reserved[14] = 1;
  r.OnFragment(1, reserved.data(), reserved.size());
  auto lying = Cut(6, 9, 1, Bytes(2000, 5), 1000);
  r.OnFragment(1, lying[0].data(), lying[0].size());
  lying[1][16] ^= 1;  // a different total length than the first fragment said
  r.OnFragment(1, lying[1].data(), lying[1].size());
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(drops, (std::vector<std::string>{
                       "a fragment shorter than its header", "a fragment of a message whose start never came",
                       "a fragment out of place", "a fragment of a message whose start never came",
                       "a fragment with reserved bits set", "a fragment out of place"}));
  EXPECT_EQ(r.partial_bytes(), 0u);
}

TEST_F(ReassemblerTest, ADeadNodesUnfinishedMessagesGo) {
  Reassembler r = Make();
  auto m1 = Cut(1, 9, 1, Bytes(3000, 1), 1000), m2 = Cut(2, 9, 1, Bytes(3000, 2), 1000);
  r.OnFragment(3, m1[0].data(), m1[0].size());
  r.OnFragment(3, m2[0].data(), m2[0].size());
  r.OnFragment(4, m1[0].data(), m1[0].size());
  EXPECT_EQ(r.DropFrom(3), 2u);
  EXPECT_EQ(r.partial_bytes(), 3000u);  // node 4's
  for (size_t i = 1; i < 3; ++i) r.OnFragment(4, m1[i].data(), m1[i].size());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].from, 4u);
  EXPECT_EQ(r.DropFrom(4), 0u);
}

}  // namespace
}  // namespace fox::ebb
