// Active-message frames come from the network: DecodeFrame must reject or
// accept any bytes without reading out of bounds, what it accepts must be
// self-consistent (and re-encode to the same bytes: the encoding is
// canonical), and a reliable channel fed the accepted frames must keep its
// invariants (in-order delivery, valid frames out, no deadline in the past).
//
// Input: one mode byte, then the frame. Mode bits:
//   0x01  fix the addressing (job, source, destination) and re-seal the MAC,
//         so that the checks behind the MAC are reached
//   0x02  also fix magic, version and payload length before sealing
//   0x04  also move seq near what the channel expects, and ack near what it
//         sent (high nibble: the offsets), so that frames get delivered
#include <cstdint>
#include <cstring>

#include "fox/net/am_frame.h"
#include "fox/net/reliable.h"
#include "fox/net/wire.h"

namespace {

using namespace fox::net;

constexpr uint64_t kJob = 0x6a6f62;
constexpr uint32_t kMe = 1;
constexpr uint32_t kPeer = 2;
const SipKey kKey{0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL};

#define CHECK(cond)                \
  do {                             \
    if (!(cond)) __builtin_trap(); \
  } while (0)

struct State {
  Channel* channel = nullptr;
  uint64_t now = 0;
  uint64_t inputs = 0;
  bool delivered_any = false;
  uint32_t last_delivered = 0;
};

State& Global() {
  static State s;
  return s;
}

void NewChannel(State& s) {
  delete s.channel;
  s.channel = new Channel;
  ChannelConfig c;
  c.address = {kJob, kMe, kPeer};
  c.key = kKey;
  c.send_window = 8;
  c.recv_window = 16;
  c.initial_send_seq = 0xfffffff0;  // cross the wrap early
  c.initial_recv_seq = 0xfffffff0;
  CHECK(s.channel->Init(c).ok());
  s.delivered_any = false;
}

// Everything the decoder claims about an accepted frame.
void CheckAccepted(const FrameView& v, const uint8_t* bytes, size_t size) {
  const FrameHeader& h = v.header();
  CHECK(v.data() == bytes && v.size() == size);
  CHECK(h.job == kJob && h.destination == kMe && h.version == kFrameVersion);
  CHECK((h.flags & ~kKnownFlags) == 0);
  CHECK(h.ack_only() == (h.message_count == 0));
  CHECK(h.mac == FrameMac(kKey, bytes, size));
  size_t n = 0;
  size_t bytes_seen = 0;
  alignas(8) uint8_t copy[kMaxFrameBytes];
  FrameBuilder b(copy, sizeof copy, {h.job, h.source, h.destination});
  for (AmMessage m : v) {
    CHECK(m.data >= v.payload() && m.data + m.length <= v.payload() + h.payload_length);
    bytes_seen += RecordBytes(m.length);
    ++n;
    fox::Result<bool> added = b.Add(m.ebb, m.handler, m.data, m.length);
    CHECK(added.ok() && *added);
  }
  CHECK(n == h.message_count && bytes_seen == h.payload_length);
  // Canonical: the same messages and header values give the same bytes.
  size_t len = b.Finish(h.seq, h.ack, h.window, kKey, h.flags, h.sack);
  CHECK(len == size && std::memcmp(copy, bytes, size) == 0);
}

void Feed(State& s, const FrameView& v) {
  Channel& ch = *s.channel;
  if (ch.CanSend() && s.inputs % 3 == 0) {
    alignas(8) uint8_t buf[kMaxFrameBytes];
    FrameBuilder b(buf, sizeof buf, ch.config().address);
    uint64_t tag = s.inputs;
    CHECK(*b.Add(fox::EbbId{1}, fox::HandlerId{2}, &tag, sizeof tag));
    CHECK(ch.Send(b).ok());
  }
  uint32_t buffered_before = ch.buffered();
  uint64_t delivered_before = ch.counters().frames_delivered;
  DropReason r = ch.OnReceive(v, s.now, [&](const FrameView& f) {
    CHECK(!f.ack_only());
    if (s.delivered_any) CHECK(f.header().seq == s.last_delivered + 1);
    s.delivered_any = true;
    s.last_delivered = f.header().seq;
    for (AmMessage m : f) CHECK(m.data + m.length <= f.data() + f.size());
  });
  CHECK(static_cast<size_t>(r) < kNumDropReasons);
  if (r != DropReason::kNone) {
    CHECK(ch.counters().frames_delivered == delivered_before && ch.buffered() == buffered_before);
  }
  CHECK(ch.buffered() < ch.config().recv_window);
  CHECK(ch.in_flight() <= ch.config().send_window);

  uint64_t deadline = ch.Poll(s.now, [&](const uint8_t* p, size_t n) {
    // What the channel sends must be a valid frame for the peer.
    fox::Result<FrameView> out = DecodeFrame(p, n, kKey, kJob, kPeer);
    CHECK(out.ok());
    CHECK(out->header().source == kMe && out->header().ack == ch.next_expected_seq());
    return true;
  });
  CHECK(deadline > s.now);  // nothing left due
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  State& s = Global();
  if (s.channel == nullptr || ++s.inputs % 4096 == 0) {
    if (s.channel != nullptr) {
      s.channel->Close();
      CHECK(s.channel->Poll(s.now, [](const uint8_t*, size_t) { return true; }) == kNoDeadline);
    }
    NewChannel(s);
  }
  s.now += 50'000;
  if (size < 1) return 0;
  uint8_t mode = data[0];
  ++data;
  --size;
  if (size > kMaxFrameBytes + 64) return 0;

  alignas(8) uint8_t buf[kMaxFrameBytes + 64];
  std::memcpy(buf, data, size);
  if ((mode & 1) && size >= kHeaderBytes) {
    namespace off = frame_offset;
    wire::Store64(buf + off::kJob, kJob);
    wire::Store32(buf + off::kSource, kPeer);
    wire::Store32(buf + off::kDestination, kMe);
    if (mode & 2) {
      wire::Store32(buf + off::kMagic, kFrameMagic);
      buf[off::kVersion] = kFrameVersion;
      if (size <= kMaxFrameBytes) {
        wire::Store16(buf + off::kPayloadLength, static_cast<uint16_t>(size - kHeaderBytes));
      }
    }
    if (mode & 4) {
      wire::Store32(buf + off::kSeq, s.channel->next_expected_seq() + (mode >> 4) - 2);
      wire::Store32(buf + off::kAck, s.channel->next_send_seq() - (mode >> 6));
    }
    if (size <= kMaxFrameBytes) wire::Store64(buf + off::kMac, FrameMac(kKey, buf, size));
  }

  DropReason why = DropReason::kNumReasons;
  fox::Result<FrameView> r = DecodeFrame(buf, size, kKey, kJob, kMe, &why);
  CHECK(r.ok() == (why == DropReason::kNone));
  CHECK(static_cast<size_t>(why) < kNumDropReasons);
  CHECK(r.ok() || r.error() == fox::Error::kInvalidArgument);
  DropReason again = DropReason::kNumReasons;
  (void)DecodeFrame(buf, size, kKey, kJob, kMe, &again);
  CHECK(again == why);  // deterministic
  if (!r.ok()) {
    CHECK(why <= DropReason::kBadPadding);  // decoder reasons only
    return 0;
  }
  CheckAccepted(*r, buf, size);
  Feed(s, *r);
  return 0;
}
