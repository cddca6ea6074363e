#include "fox/net/am_frame.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "fox/net/wire.h"

namespace fox::net {
namespace {

constexpr uint64_t kJob = 0x1122334455667788ULL;
constexpr uint32_t kMe = 7;
constexpr uint32_t kPeer = 3;
const SipKey kKey{0x0123456789abcdefULL, 0xfedcba9876543210ULL};
const FrameAddress kToMe{kJob, kPeer, kMe};

struct Decoded {
  DropReason reason;
  bool ok;
};

Decoded Decode(const uint8_t* p, size_t n) {
  DropReason why = DropReason::kNumReasons;
  Result<FrameView> r = DecodeFrame(p, n, kKey, kJob, kMe, &why);
  EXPECT_EQ(r.ok(), why == DropReason::kNone);
  if (!r.ok()) EXPECT_EQ(r.error(), Error::kInvalidArgument);
  return {why, r.ok()};
}

std::vector<uint8_t> Bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + 31 * i);
  return v;
}

TEST(AmFrame, LayoutConstants) {
  EXPECT_EQ(kHeaderBytes, 56u);
  EXPECT_EQ(kMaxFrameBytes, 1500u - 20u - 8u);
  EXPECT_EQ(kMaxPayloadBytes, 1416u);
  EXPECT_EQ(kMaxMessageBytes, 1408u);
  EXPECT_EQ(RecordBytes(0), 8u);
  EXPECT_EQ(RecordBytes(1), 16u);
  EXPECT_EQ(RecordBytes(8), 16u);
  EXPECT_EQ(RecordBytes(9), 24u);
}

TEST(AmFrame, RoundTripSeveralMessages) {
  alignas(8) uint8_t buf[kMaxFrameBytes];
  FrameBuilder b(buf, sizeof buf, kToMe);
  std::vector<std::vector<uint8_t>> payloads = {Bytes(0, 1), Bytes(1, 2), Bytes(7, 3),
                                                Bytes(8, 4), Bytes(9, 5), Bytes(300, 6)};
  for (size_t i = 0; i < payloads.size(); ++i) {
    Result<bool> r = b.Add(EbbId{uint32_t(100 + i)}, HandlerId{uint16_t(i)}, payloads[i].data(), payloads[i].size());
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(*r);
  }
  size_t len = b.Finish(0xfffffff0u, 42, 128, kKey, kFlagAckNow, 0x5);
  EXPECT_EQ(len, kHeaderBytes + b.payload_bytes());

  // Decode from an odd address, as from a NIC buffer.
  std::vector<uint8_t> nic(len + 42);
  std::memcpy(nic.data() + 42, buf, len);
  DropReason why;
  Result<FrameView> r = DecodeFrame(nic.data() + 42, len, kKey, kJob, kMe, &why);
  ASSERT_TRUE(r.ok()) << DropReasonName(why);
  const FrameView& v = *r;
  EXPECT_EQ(v.header().seq, 0xfffffff0u);
  EXPECT_EQ(v.header().ack, 42u);
  EXPECT_EQ(v.header().window, 128u);
  EXPECT_EQ(v.header().sack, 0x5u);
  EXPECT_EQ(v.header().flags, kFlagAckNow);
  EXPECT_EQ(v.header().source, kPeer);
  EXPECT_EQ(v.header().destination, kMe);
  EXPECT_EQ(v.header().job, kJob);
  EXPECT_FALSE(v.ack_only());
  EXPECT_EQ(v.message_count(), payloads.size());
  size_t i = 0;
  for (AmMessage m : v) {
    ASSERT_LT(i, payloads.size());
    EXPECT_EQ(Raw(m.ebb), 100 + i);
    EXPECT_EQ(Raw(m.handler), i);
    ASSERT_EQ(m.length, payloads[i].size());
    if (m.length != 0) EXPECT_EQ(std::memcmp(m.data, payloads[i].data(), m.length), 0);
    EXPECT_EQ((m.data - v.data()) % 8, 0);  // aligned relative to the frame
    ++i;
  }
  EXPECT_EQ(i, payloads.size());
}

TEST(AmFrame, ExactFitAndFull) {
  alignas(8) uint8_t buf[kMaxFrameBytes];
  auto big = Bytes(kMaxMessageBytes, 9);
  {
    FrameBuilder b(buf, sizeof buf, kToMe);
    Result<bool> r = b.Add(EbbId{1}, HandlerId{2}, big.data(), big.size());  // one message fills the frame
    ASSERT_TRUE(r.ok() && *r);
    EXPECT_EQ(b.payload_bytes(), kMaxPayloadBytes);
    EXPECT_EQ(b.room(), 0u);
    Result<bool> full = b.Add(EbbId{1}, HandlerId{2}, nullptr, 0);  // not even an empty message fits now
    ASSERT_TRUE(full.ok());
    EXPECT_FALSE(*full);
    size_t len = b.Finish(1, 0, 1, kKey);
    EXPECT_EQ(len, kMaxFrameBytes);
    EXPECT_TRUE(Decode(buf, len).ok);
  }
  {
    // Too large for any frame: an error, not "flush and retry".
    FrameBuilder b(buf, sizeof buf, kToMe);
    Result<bool> r = b.Add(EbbId{1}, HandlerId{2}, big.data(), kMaxMessageBytes + 1);
    EXPECT_EQ(r.error(), Error::kOutOfRange);
    EXPECT_TRUE(b.empty());
  }
  {
    // 177 empty messages fill a frame exactly.
    FrameBuilder b(buf, sizeof buf, kToMe);
    for (size_t i = 0; i < kMaxMessagesPerFrame; ++i) {
      Result<bool> r = b.Add(EbbId{uint32_t(i)}, HandlerId{0}, nullptr, 0);
      ASSERT_TRUE(r.ok() && *r) << i;
    }
    Result<bool> r = b.Add(EbbId{0}, HandlerId{0}, nullptr, 0);
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(*r);
    size_t len = b.Finish(1, 0, 1, kKey);
    EXPECT_EQ(len, kMaxFrameBytes);
    DropReason why;
    Result<FrameView> d = DecodeFrame(buf, len, kKey, kJob, kMe, &why);
    ASSERT_TRUE(d.ok()) << DropReasonName(why);
    size_t n = 0;
    for (AmMessage m : *d) EXPECT_EQ(Raw(m.ebb), n++);
    EXPECT_EQ(n, kMaxMessagesPerFrame);
  }
  {
    // room() is exact: a message of room() bytes fits, then nothing does.
    FrameBuilder b(buf, sizeof buf, kToMe);
    ASSERT_TRUE(*b.Add(EbbId{1}, HandlerId{1}, big.data(), 100));
    size_t room = b.room();
    EXPECT_EQ(room, kMaxPayloadBytes - RecordBytes(100) - kRecordHeaderBytes);
    Result<bool> r = b.Add(EbbId{1}, HandlerId{1}, big.data(), room + 1);
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(*r);
    Result<bool> fits = b.Add(EbbId{1}, HandlerId{1}, big.data(), room);
    ASSERT_TRUE(fits.ok() && *fits);
    EXPECT_EQ(b.payload_bytes(), kMaxPayloadBytes);
  }
}

TEST(AmFrame, SmallCapacityBuilder) {
  uint8_t buf[kHeaderBytes + 24];
  std::memset(buf, 0xee, sizeof buf);
  FrameBuilder b(buf, sizeof buf, kToMe);
  EXPECT_EQ(b.Add(EbbId{1}, HandlerId{1}, "0123456789abcdefg", 17).error(), Error::kOutOfRange);  // 32 > 24
  ASSERT_TRUE(*b.Add(EbbId{1}, HandlerId{1}, "0123456789abcdef", 16));                            // 24 bytes
  EXPECT_EQ(b.Finish(1, 2, 3, kKey), sizeof buf);
  EXPECT_TRUE(Decode(buf, sizeof buf).ok);
  uint8_t tiny[kHeaderBytes - 1];
  FrameBuilder t(tiny, sizeof tiny, kToMe);
  EXPECT_EQ(t.Add(EbbId{1}, HandlerId{1}, nullptr, 0).error(), Error::kOutOfRange);
  EXPECT_EQ(t.Finish(1, 2, 3, kKey), 0u);
}

TEST(AmFrame, ReserveSerializesInPlace) {
  alignas(8) uint8_t buf[kMaxFrameBytes];
  std::memset(buf, 0xaa, sizeof buf);  // padding must come out zero anyway
  FrameBuilder b(buf, sizeof buf, kToMe);
  Result<uint8_t*> at = b.Reserve(EbbId{5}, HandlerId{6}, 3);
  ASSERT_TRUE(at.ok());
  ASSERT_NE(*at, nullptr);
  std::memcpy(*at, "abc", 3);
  size_t len = b.Finish(9, 9, 9, kKey);
  DropReason why;
  Result<FrameView> d = DecodeFrame(buf, len, kKey, kJob, kMe, &why);
  ASSERT_TRUE(d.ok()) << DropReasonName(why);
  AmMessage m = *d->begin();
  EXPECT_EQ(Raw(m.ebb), 5u);
  EXPECT_EQ(Raw(m.handler), 6u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m.data), m.length), "abc");
}

TEST(AmFrame, AckOnlyFrame) {
  alignas(8) uint8_t buf[kMaxFrameBytes];
  FrameBuilder b(buf, sizeof buf, kToMe);
  size_t len = b.Finish(10, 20, 30, kKey);
  EXPECT_EQ(len, kHeaderBytes);
  DropReason why;
  Result<FrameView> d = DecodeFrame(buf, len, kKey, kJob, kMe, &why);
  ASSERT_TRUE(d.ok()) << DropReasonName(why);
  EXPECT_TRUE(d->ack_only());
  EXPECT_EQ(d->message_count(), 0u);
  EXPECT_TRUE(d->begin() == d->end());
}

// ---- Every DropReason DecodeFrame can produce ------------------------------

class CraftedFrame : public ::testing::Test {
 protected:
  void SetUp() override {
    FrameBuilder b(buf_, sizeof buf_, kToMe);
    ASSERT_TRUE(*b.Add(EbbId{1}, HandlerId{2}, "hello", 5));
    ASSERT_TRUE(*b.Add(EbbId{3}, HandlerId{4}, "world!!!", 8));
    len_ = b.Finish(100, 200, 64, kKey);
    ASSERT_TRUE(Decode(buf_, len_).ok);
    h_ = DecodeFrame(buf_, len_, kKey, kJob, kMe)->header();
  }
  // Re-seals the frame with header `h` (valid MAC) and decodes it.
  DropReason Reseal(const FrameHeader& h, size_t len) {
    SealFrame(buf_, h, kKey);
    return Decode(buf_, len).reason;
  }

  alignas(8) uint8_t buf_[kMaxFrameBytes + 8] = {};
  size_t len_ = 0;
  FrameHeader h_;
};

TEST_F(CraftedFrame, Truncated) {
  EXPECT_EQ(Decode(buf_, 0).reason, DropReason::kTruncated);
  EXPECT_EQ(Decode(buf_, kHeaderBytes - 1).reason, DropReason::kTruncated);
  EXPECT_EQ(Decode(buf_, len_ - 8).reason, DropReason::kTruncated);  // payload cut short
}

TEST_F(CraftedFrame, Oversized) { EXPECT_EQ(Decode(buf_, kMaxFrameBytes + 1).reason, DropReason::kOversized); }

TEST_F(CraftedFrame, BadMagic) {
  buf_[0] ^= 0x20;
  EXPECT_EQ(Decode(buf_, len_).reason, DropReason::kBadMagic);
}

TEST_F(CraftedFrame, BadVersion) {
  FrameHeader h = h_;
  h.version = 2;
  EXPECT_EQ(Reseal(h, len_), DropReason::kBadVersion);
}

TEST_F(CraftedFrame, WrongJob) {
  FrameHeader h = h_;
  h.job = kJob + 1;
  EXPECT_EQ(Reseal(h, len_), DropReason::kWrongJob);
}

TEST_F(CraftedFrame, WrongDestination) {
  FrameHeader h = h_;
  h.destination = kMe + 1;
  EXPECT_EQ(Reseal(h, len_), DropReason::kWrongDestination);
}

TEST_F(CraftedFrame, BadLength) {
  // Trailing bytes after the declared payload.
  EXPECT_EQ(Decode(buf_, len_ + 8).reason, DropReason::kBadLength);
  // A payload length that is not a multiple of 8.
  FrameHeader h = h_;
  h.payload_length -= 3;
  EXPECT_EQ(Reseal(h, len_ - 3), DropReason::kBadLength);
}

TEST_F(CraftedFrame, BadMac) {
  buf_[kHeaderBytes + 9] ^= 1;  // payload bit
  EXPECT_EQ(Decode(buf_, len_).reason, DropReason::kBadMac);
  buf_[kHeaderBytes + 9] ^= 1;
  buf_[frame_offset::kSeq] ^= 1;  // header bit
  EXPECT_EQ(Decode(buf_, len_).reason, DropReason::kBadMac);
  buf_[frame_offset::kSeq] ^= 1;
  ASSERT_TRUE(Decode(buf_, len_).ok);
  SipKey other = kKey;
  other.k0 ^= 1;  // another job's key
  EXPECT_EQ(DecodeFrame(buf_, len_, other, kJob, kMe).error(), Error::kInvalidArgument);
  DropReason why;
  (void)DecodeFrame(buf_, len_, other, kJob, kMe, &why);
  EXPECT_EQ(why, DropReason::kBadMac);
}

TEST_F(CraftedFrame, BadFlags) {
  FrameHeader h = h_;
  h.flags = 0x80;
  EXPECT_EQ(Reseal(h, len_), DropReason::kBadFlags);
  // A non-zero reserved field, authenticated.
  SealFrame(buf_, h_, kKey);
  wire::Store32(buf_ + frame_offset::kReserved, 1);
  wire::Store64(buf_ + frame_offset::kMac, FrameMac(kKey, buf_, len_));
  EXPECT_EQ(Decode(buf_, len_).reason, DropReason::kBadFlags);
}

TEST_F(CraftedFrame, BadCount) {
  FrameHeader h = h_;
  h.message_count = 1;  // two records present
  EXPECT_EQ(Reseal(h, len_), DropReason::kBadCount);
  h.message_count = 3;  // two records present
  EXPECT_EQ(Reseal(h, len_), DropReason::kBadCount);
  h.message_count = 2;
  h.flags = kFlagAckOnly;  // ack-only with messages
  EXPECT_EQ(Reseal(h, len_), DropReason::kBadCount);
  h.flags = 0;  // a data frame without messages
  h.message_count = 0;
  h.payload_length = 0;
  EXPECT_EQ(Reseal(h, kHeaderBytes), DropReason::kBadCount);
}

TEST_F(CraftedFrame, RecordOverrun) {
  // Second record claims more data than the payload holds.
  wire::Store16(buf_ + kHeaderBytes + 16 + 6, 9);
  EXPECT_EQ(Reseal(h_, len_), DropReason::kRecordOverrun);
  // A payload ending with a partial record header.
  FrameHeader h = h_;
  wire::Store16(buf_ + kHeaderBytes + 16 + 6, 8);
  h.payload_length = 16;                      // first record only, but it says...
  wire::Store16(buf_ + kHeaderBytes + 6, 9);  // ...24 bytes long
  EXPECT_EQ(Reseal(h, kHeaderBytes + 16), DropReason::kRecordOverrun);
}

TEST_F(CraftedFrame, BadPadding) {
  buf_[kHeaderBytes + 8 + 5] = 1;  // after "hello"
  EXPECT_EQ(Reseal(h_, len_), DropReason::kBadPadding);
}

TEST(DropReason, NamesAreDistinct) {
  for (size_t i = 0; i < kNumDropReasons; ++i) {
    for (size_t j = i + 1; j < kNumDropReasons; ++j) {
      EXPECT_STRNE(DropReasonName(static_cast<DropReason>(i)), DropReasonName(static_cast<DropReason>(j)));
    }
  }
  DropCounters c;
  c.Add(DropReason::kBadMac);
  c.Add(DropReason::kBadMac);
  c.Add(DropReason::kNone);
  EXPECT_EQ(c[DropReason::kBadMac], 2u);
  EXPECT_EQ(c.Total(), 2u);
}

}  // namespace
}  // namespace fox::net
