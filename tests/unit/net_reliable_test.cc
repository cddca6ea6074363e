// Reliable channel, scenario by scenario, with frames moved by hand.
#include "fox/net/reliable.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "fox/net/wire.h"

namespace fox::net {
namespace {

constexpr uint64_t kJob = 77;
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kUs = 1'000;
const SipKey kKey{1, 2};

using Packet = std::vector<uint8_t>;

// One end: a channel, what it transmitted, what it delivered.
struct End {
  uint32_t node;
  uint32_t peer;
  Channel ch;
  std::vector<Packet> sent;
  std::vector<uint32_t> delivered;  // sequence numbers, in delivery order
  std::vector<uint64_t> tags;       // first message's 8 bytes, in delivery order

  End(uint32_t n, uint32_t p, ChannelConfig c = {}) : node(n), peer(p) {
    c.address = {kJob, n, p};
    c.key = kKey;
    EXPECT_TRUE(ch.Init(c).ok());
  }

  // Queues one frame carrying `tag`; returns its sequence number.
  Result<uint32_t> SendTag(uint64_t tag) {
    uint8_t buf[kMaxFrameBytes];
    FrameBuilder b(buf, sizeof buf, ch.config().address);
    EXPECT_TRUE(*b.Add(EbbId{10}, HandlerId{1}, &tag, sizeof tag));
    return ch.Send(b);
  }

  uint64_t Poll(uint64_t now) {
    return ch.Poll(now, [&](const uint8_t* p, size_t n) {
      sent.emplace_back(p, p + n);
      return true;
    });
  }

  // Delivers `p` (transmitted by the peer) to this end.
  DropReason Receive(const Packet& p, uint64_t now) {
    DropReason why;
    Result<FrameView> v = DecodeFrame(p.data(), p.size(), kKey, kJob, node, &why);
    EXPECT_TRUE(v.ok()) << DropReasonName(why);
    if (!v.ok()) return why;
    return ch.OnReceive(*v, now, [&](const FrameView& f) {
      delivered.push_back(f.header().seq);
      uint64_t tag;
      std::memcpy(&tag, (*f.begin()).data, sizeof tag);
      tags.push_back(tag);
    });
  }
};

FrameHeader HeaderOf(const Packet& p) {
  return DecodeFrame(p.data(), p.size(), kKey, kJob, wire::Load32(p.data() + 20))->header();
}

TEST(Channel, ConfigValidation) {
  Channel c;
  ChannelConfig bad;
  bad.address = {kJob, 1, 2};
  bad.send_window = 0;
  EXPECT_EQ(c.Init(bad).error(), Error::kInvalidArgument);
  bad.send_window = kMaxWindow + 1;
  EXPECT_EQ(c.Init(bad).error(), Error::kInvalidArgument);
  bad.send_window = 4;
  bad.address.destination = 1;  // to itself
  EXPECT_EQ(c.Init(bad).error(), Error::kInvalidArgument);
  bad.address.destination = 2;
  ASSERT_TRUE(c.Init(bad).ok());
  EXPECT_EQ(c.Init(bad).error(), Error::kAlreadyExists);
}

TEST(Channel, InOrderDeliveryWithDelayedAck) {
  End a(1, 2), b(2, 1);
  ASSERT_EQ(*a.SendTag(111), 0u);
  EXPECT_EQ(a.ch.NextDeadline(), 0u);  // waiting to be transmitted
  EXPECT_EQ(a.Poll(0), 20 * kMs);      // initial RTO
  ASSERT_EQ(a.sent.size(), 1u);
  EXPECT_EQ(HeaderOf(a.sent[0]).seq, 0u);
  EXPECT_EQ(HeaderOf(a.sent[0]).flags, 0u);

  EXPECT_EQ(b.Receive(a.sent[0], 100 * kUs), DropReason::kNone);
  EXPECT_EQ(b.tags, std::vector<uint64_t>{111});
  EXPECT_EQ(b.Poll(100 * kUs), 1100 * kUs);  // the ack waits for something to ride on
  EXPECT_TRUE(b.sent.empty());
  EXPECT_EQ(b.Poll(1100 * kUs), kNoDeadline);
  ASSERT_EQ(b.sent.size(), 1u);
  FrameHeader ack = HeaderOf(b.sent[0]);
  EXPECT_TRUE(ack.ack_only());
  EXPECT_EQ(ack.ack, 1u);
  EXPECT_EQ(ack.window, 128u);

  EXPECT_EQ(a.Receive(b.sent[0], 1200 * kUs), DropReason::kNone);
  EXPECT_EQ(a.ch.in_flight(), 0u);
  EXPECT_TRUE(a.ch.idle());
  EXPECT_EQ(a.ch.srtt_ns(), 1200 * kUs);
  EXPECT_EQ(a.ch.rto_ns(), 5 * kMs);  // 1.2 + 4 * 0.6 ms, raised to min_rto
  EXPECT_EQ(a.Poll(1200 * kUs), kNoDeadline);
  EXPECT_EQ(a.ch.counters().frames_sent, 1u);
  EXPECT_EQ(a.ch.counters().frames_acked, 1u);
  EXPECT_EQ(a.ch.counters().acks_received, 1u);
  EXPECT_EQ(b.ch.counters().frames_delivered, 1u);
  EXPECT_EQ(b.ch.counters().acks_sent, 1u);
}

TEST(Channel, RtoFollowsRfc6298) {
  ChannelConfig c;
  c.min_rto_ns = 1 * kMs;
  End a(1, 2, c), b(2, 1);
  ASSERT_TRUE(a.SendTag(1).ok());
  a.Poll(0);
  b.Receive(a.sent[0], 0);
  b.Poll(1 * kMs);
  a.Receive(b.sent[0], 1 * kMs);
  EXPECT_EQ(a.ch.srtt_ns(), 1 * kMs);
  EXPECT_EQ(a.ch.rto_ns(), 3 * kMs);  // srtt + 4 * srtt / 2
}

TEST(Channel, AckEveryNFramesIsImmediate) {
  ChannelConfig c;
  c.ack_every = 4;
  End a(1, 2), b(2, 1, c);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(a.SendTag(i).ok());
  a.Poll(0);
  ASSERT_EQ(a.sent.size(), 4u);
  for (int i = 0; i < 3; ++i) b.Receive(a.sent[i], 10);
  b.Poll(10);
  EXPECT_TRUE(b.sent.empty());
  b.Receive(a.sent[3], 10);
  b.Poll(10);
  ASSERT_EQ(b.sent.size(), 1u);
  EXPECT_EQ(HeaderOf(b.sent[0]).ack, 4u);
}

TEST(Channel, AcksRideOnDataFrames) {
  End a(1, 2), b(2, 1);
  ASSERT_TRUE(a.SendTag(1).ok());
  a.Poll(0);
  b.Receive(a.sent[0], 10);
  ASSERT_TRUE(b.SendTag(2).ok());
  b.Poll(20);
  ASSERT_EQ(b.sent.size(), 1u);  // data only, no separate ack
  FrameHeader h = HeaderOf(b.sent[0]);
  EXPECT_FALSE(h.ack_only());
  EXPECT_EQ(h.ack, 1u);
  EXPECT_EQ(b.ch.counters().acks_sent, 0u);
  a.Receive(b.sent[0], 30);
  EXPECT_EQ(a.ch.in_flight(), 0u);
  EXPECT_EQ(a.tags, std::vector<uint64_t>{2});
}

TEST(Channel, SendWindowBackpressure) {
  ChannelConfig c;
  c.send_window = 4;
  End a(1, 2, c), b(2, 1);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(a.SendTag(i).ok());
  EXPECT_FALSE(a.ch.CanSend());
  EXPECT_EQ(a.SendTag(4).error(), Error::kBusy);
  EXPECT_EQ(a.ch.counters().send_busy, 1u);
  a.Poll(0);
  ASSERT_EQ(a.sent.size(), 4u);
  EXPECT_EQ(HeaderOf(a.sent[2]).flags & kFlagAckNow, 0);
  EXPECT_EQ(HeaderOf(a.sent[3]).flags & kFlagAckNow, kFlagAckNow);  // fills the window
  for (const Packet& p : a.sent) b.Receive(p, 10);
  EXPECT_EQ(b.ch.NextDeadline(), 10u);  // asked to ack at once
  b.Poll(10);
  ASSERT_EQ(b.sent.size(), 1u);
  a.Receive(b.sent[0], 20);
  EXPECT_TRUE(a.ch.CanSend());
  for (int i = 4; i < 8; ++i) ASSERT_TRUE(a.SendTag(i).ok());
  EXPECT_EQ(a.SendTag(8).error(), Error::kBusy);
}

TEST(Channel, ReceiveWindowLimitsSenderAndDropsBeyond) {
  ChannelConfig small;
  small.recv_window = 2;
  ChannelConfig big;
  big.send_window = 8;
  End a(1, 2, big), b(2, 1, small);
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(a.SendTag(i).ok());
  a.Poll(0);
  ASSERT_EQ(a.sent.size(), 8u);  // before any ack, a assumes its own window
  for (int i = 7; i >= 2; --i) EXPECT_EQ(b.Receive(a.sent[i], 10), DropReason::kOutOfWindow);
  EXPECT_EQ(b.Receive(a.sent[1], 10), DropReason::kNone);  // buffered
  EXPECT_EQ(b.ch.buffered(), 1u);
  EXPECT_EQ(b.Receive(a.sent[0], 10), DropReason::kNone);
  EXPECT_EQ(b.delivered, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(b.ch.counters().out_of_window, 6u);
  b.Poll(10);
  a.Receive(b.sent.back(), 20);
  EXPECT_EQ(a.ch.window(), 2u);
  EXPECT_EQ(a.ch.in_flight(), 6u);
  // Only the two frames inside the peer's window are retransmitted.
  a.sent.clear();
  a.Poll(20 * kMs);
  ASSERT_EQ(a.sent.size(), 2u);
  EXPECT_EQ(HeaderOf(a.sent[0]).seq, 2u);
  EXPECT_EQ(HeaderOf(a.sent[1]).seq, 3u);
}

TEST(Channel, OutOfOrderFramesAreHeldAndSelectivelyAcked) {
  End a(1, 2), b(2, 1);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(a.SendTag(100 + i).ok());
  a.Poll(0);
  EXPECT_EQ(b.Receive(a.sent[0], 10), DropReason::kNone);
  EXPECT_EQ(b.Receive(a.sent[2], 10), DropReason::kNone);
  EXPECT_EQ(b.Receive(a.sent[4], 10), DropReason::kNone);
  EXPECT_EQ(b.delivered, std::vector<uint32_t>{0});
  EXPECT_EQ(b.ch.buffered(), 2u);
  b.Poll(10);  // a hole: acked at once
  ASSERT_EQ(b.sent.size(), 1u);
  FrameHeader h = HeaderOf(b.sent[0]);
  EXPECT_EQ(h.ack, 1u);
  EXPECT_EQ(h.sack, 0b101u);  // frames 2 and 4
  EXPECT_EQ(b.Receive(a.sent[1], 20), DropReason::kNone);
  EXPECT_EQ(b.Receive(a.sent[3], 20), DropReason::kNone);
  EXPECT_EQ(b.delivered, (std::vector<uint32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(b.tags, (std::vector<uint64_t>{100, 101, 102, 103, 104}));
  EXPECT_EQ(b.ch.buffered(), 0u);
  EXPECT_EQ(b.ch.counters().frames_buffered, 2u);
}

TEST(Channel, DuplicatesAreSuppressedCountedAndReacked) {
  End a(1, 2), b(2, 1);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(a.SendTag(i).ok());
  a.Poll(0);
  EXPECT_EQ(b.Receive(a.sent[0], 10), DropReason::kNone);
  EXPECT_EQ(b.Receive(a.sent[2], 10), DropReason::kNone);
  b.Poll(10);
  b.sent.clear();
  EXPECT_EQ(b.Receive(a.sent[0], 20), DropReason::kDuplicate);  // delivered already
  EXPECT_EQ(b.Receive(a.sent[2], 20), DropReason::kDuplicate);  // held already
  EXPECT_EQ(b.ch.counters().duplicates, 2u);
  EXPECT_EQ(b.delivered, std::vector<uint32_t>{0});
  EXPECT_EQ(b.ch.NextDeadline(), 20u);  // re-ack without delay
  b.Poll(20);
  EXPECT_EQ(b.sent.size(), 1u);
}

TEST(Channel, FramesFarBehindAreStale) {
  ChannelConfig late;
  late.initial_recv_seq = kDuplicateHorizon + 10;
  End a(1, 2), b(2, 1, late);
  ASSERT_TRUE(a.SendTag(1).ok());
  a.Poll(0);
  EXPECT_EQ(b.Receive(a.sent[0], 10), DropReason::kStale);
  EXPECT_EQ(b.ch.counters().stale, 1u);
  EXPECT_EQ(b.ch.NextDeadline(), kNoDeadline);  // not re-acked
}

TEST(Channel, RetransmissionTimeoutWithExponentialBackoff) {
  End a(1, 2), b(2, 1);
  ASSERT_TRUE(a.SendTag(7).ok());
  EXPECT_EQ(a.Poll(0), 20 * kMs);
  EXPECT_EQ(a.Poll(20 * kMs - 1), 20 * kMs);
  EXPECT_EQ(a.sent.size(), 1u);
  EXPECT_EQ(a.Poll(20 * kMs), 60 * kMs);  // retransmitted; RTO doubled
  ASSERT_EQ(a.sent.size(), 2u);
  EXPECT_EQ(HeaderOf(a.sent[1]).flags, kFlagRetransmit | kFlagAckNow);
  EXPECT_EQ(a.ch.backoff(), 1u);
  EXPECT_EQ(a.Poll(60 * kMs), 140 * kMs);
  EXPECT_EQ(a.sent.size(), 3u);
  EXPECT_EQ(a.ch.counters().timeouts, 2u);
  EXPECT_EQ(a.ch.counters().frames_retransmitted, 2u);
  // The backoff is capped at max_rto.
  uint64_t t = 140 * kMs;
  for (int i = 0; i < 20; ++i) t = a.Poll(t);
  EXPECT_EQ(a.ch.rto_ns(), 1000 * kMs);
  // An ack ends the backoff; no RTT sample from a retransmitted frame (Karn).
  b.Receive(a.sent.back(), t);
  b.Poll(t);
  a.Receive(b.sent.back(), t + 1);
  EXPECT_EQ(a.ch.backoff(), 0u);
  EXPECT_EQ(a.ch.srtt_ns(), 0u);
  EXPECT_EQ(a.ch.rto_ns(), 20 * kMs);
  EXPECT_EQ(b.tags, std::vector<uint64_t>{7});
}

TEST(Channel, LaterFramesArrivingTriggerFastRetransmission) {
  End a(1, 2), b(2, 1);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(a.SendTag(i).ok());
  a.Poll(0);
  for (int i = 0; i < 10; ++i) {
    if (i != 3) b.Receive(a.sent[i], 100 * kUs);
  }
  b.Poll(100 * kUs);
  ASSERT_EQ(b.sent.size(), 1u);
  EXPECT_EQ(HeaderOf(b.sent[0]).ack, 3u);
  EXPECT_EQ(HeaderOf(b.sent[0]).sack, 0b111111u);  // 4..9
  a.Receive(b.sent[0], 200 * kUs);
  EXPECT_EQ(a.ch.srtt_ns(), 200 * kUs);
  EXPECT_EQ(a.ch.in_flight(), 7u);
  // Frame 3 is lost once the reordering allowance (srtt / 4) has passed.
  EXPECT_EQ(a.ch.NextDeadline(), 250 * kUs);
  a.sent.clear();
  a.Poll(250 * kUs);
  ASSERT_EQ(a.sent.size(), 1u);  // only the hole, not the frames acknowledged selectively
  EXPECT_EQ(HeaderOf(a.sent[0]).seq, 3u);
  EXPECT_EQ(a.ch.counters().fast_retransmits, 1u);
  EXPECT_EQ(a.ch.counters().timeouts, 0u);
  b.Receive(a.sent[0], 300 * kUs);
  EXPECT_EQ(b.delivered.size(), 10u);
  b.Poll(300 * kUs);
  a.Receive(b.sent.back(), 400 * kUs);
  EXPECT_EQ(a.ch.in_flight(), 0u);
}

// The platform dropped the first frames for want of the peer's link address
// (native ARP): once it has it, those frames go again at the next Poll, not
// after their RTO; frames sent since, or already acknowledged, do not.
TEST(Channel, FramesDroppedBeforeTheWireAreResentAtOnce) {
  End a(1, 2), b(2, 1);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(a.SendTag(i).ok());
  EXPECT_EQ(a.Poll(0), 20 * kMs);  // "transmitted": the platform dropped all three
  a.sent.clear();                  // lost
  // The address is known at 1 ms; frames 3 and 4 go out after that.
  ASSERT_TRUE(a.SendTag(3).ok());
  ASSERT_TRUE(a.SendTag(4).ok());
  a.Poll(2 * kMs);
  std::vector<Packet> later = std::move(a.sent);
  a.sent.clear();
  EXPECT_EQ(a.ch.ResendDroppedBefore(1 * kMs), 3u);
  EXPECT_EQ(a.ch.NextDeadline(), 0u);  // due now
  a.Poll(3 * kMs);
  ASSERT_EQ(a.sent.size(), 3u);  // 0, 1 and 2 only
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(HeaderOf(a.sent[i]).seq, i);
    EXPECT_EQ(HeaderOf(a.sent[i]).flags, kFlagRetransmit | kFlagAckNow);
  }
  EXPECT_EQ(a.ch.counters().resent_dropped, 3u);
  EXPECT_EQ(a.ch.counters().frames_retransmitted, 3u);
  EXPECT_EQ(a.ch.counters().timeouts, 0u);
  // Resent already: a second call marks nothing.
  EXPECT_EQ(a.ch.ResendDroppedBefore(1 * kMs), 0u);
  for (const Packet& p : later) b.Receive(p, 4 * kMs);
  for (const Packet& p : a.sent) b.Receive(p, 4 * kMs);
  EXPECT_EQ(b.tags, (std::vector<uint64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(b.ch.counters().duplicates, 0u);
  b.Poll(4 * kMs);
  a.Receive(b.sent.back(), 5 * kMs);
  EXPECT_EQ(a.ch.in_flight(), 0u);
  EXPECT_EQ(a.ch.ResendDroppedBefore(10 * kMs), 0u);  // nothing unacknowledged
}

TEST(Channel, SequenceNumbersWrapAround) {
  ChannelConfig c;
  c.initial_send_seq = 0xfffffffd;
  c.initial_recv_seq = 0xfffffffd;
  End a(1, 2, c), b(2, 1, c);
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(a.SendTag(i).ok());
  a.Poll(0);
  // Reversed arrival across the wrap.
  for (int i = 5; i >= 0; --i) EXPECT_EQ(b.Receive(a.sent[i], 10), DropReason::kNone);
  EXPECT_EQ(b.delivered, (std::vector<uint32_t>{0xfffffffd, 0xfffffffe, 0xffffffff, 0, 1, 2}));
  EXPECT_EQ(b.tags, (std::vector<uint64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(b.Receive(a.sent[1], 10), DropReason::kDuplicate);
  b.Poll(10);
  a.Receive(b.sent.back(), 20);
  EXPECT_EQ(a.ch.in_flight(), 0u);
  EXPECT_EQ(a.ch.next_send_seq(), 3u);
}

TEST(Channel, ClosedPeerIsDeadForGood) {
  End a(1, 2), b(2, 1);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(b.SendTag(i).ok());
  b.Poll(0);
  ASSERT_TRUE(a.SendTag(9).ok());
  a.Receive(b.sent[1], 10);  // held out of order
  a.ch.Close();
  EXPECT_TRUE(a.ch.closed());
  EXPECT_EQ(a.ch.counters().dropped_on_close, 2u);  // one unacked, one held
  EXPECT_FALSE(a.ch.CanSend());
  EXPECT_EQ(a.SendTag(10).error(), Error::kPeerDead);
  EXPECT_EQ(a.Poll(1 * kMs), kNoDeadline);
  EXPECT_TRUE(a.sent.empty());
  EXPECT_EQ(a.Receive(b.sent[0], 20), DropReason::kPeerClosed);
  EXPECT_EQ(a.Receive(b.sent[2], 20), DropReason::kPeerClosed);
  EXPECT_EQ(a.ch.counters().rejected_closed, 2u);
  EXPECT_TRUE(a.delivered.empty());
  a.ch.Close();  // idempotent
}

TEST(Channel, CloseFromTheDeliveryCallbackStopsDelivery) {
  End a(1, 2), b(2, 1);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(a.SendTag(i).ok());
  a.Poll(0);
  b.Receive(a.sent[1], 10);
  b.Receive(a.sent[2], 10);
  Result<FrameView> v = DecodeFrame(a.sent[0].data(), a.sent[0].size(), kKey, kJob, 2);
  ASSERT_TRUE(v.ok());
  int calls = 0;
  EXPECT_EQ(b.ch.OnReceive(*v, 20,
                           [&](const FrameView&) {
                             ++calls;
                             b.ch.Close();
                           }),
            DropReason::kNone);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(b.ch.counters().dropped_on_close, 2u);
  EXPECT_EQ(b.Receive(a.sent[0], 30), DropReason::kPeerClosed);
}

TEST(Channel, DeliveryCallbackMaySendAndPoll) {
  End a(1, 2), b(2, 1);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(a.SendTag(i).ok());
  a.Poll(0);
  b.Receive(a.sent[1], 10);
  b.Receive(a.sent[2], 10);
  Result<FrameView> v = DecodeFrame(a.sent[0].data(), a.sent[0].size(), kKey, kJob, 2);
  ASSERT_TRUE(v.ok());
  std::vector<uint32_t> acks;
  b.ch.OnReceive(*v, 20, [&](const FrameView& f) {
    uint64_t reply = f.header().seq + 1000;
    ASSERT_TRUE(b.SendTag(reply).ok());
    b.Poll(20);
    acks.push_back(HeaderOf(b.sent.back()).ack);
  });
  EXPECT_EQ(acks, (std::vector<uint32_t>{1, 2, 3}));  // each reply acks what it answers
  for (const Packet& p : b.sent) a.Receive(p, 30);
  EXPECT_EQ(a.tags, (std::vector<uint64_t>{1000, 1001, 1002}));
  EXPECT_EQ(a.ch.in_flight(), 0u);
}

TEST(Channel, FramesFromOthersAreRejected) {
  End a(1, 2), stranger(3, 1);
  ASSERT_TRUE(stranger.SendTag(1).ok());
  stranger.Poll(0);
  EXPECT_EQ(a.Receive(stranger.sent[0], 10), DropReason::kWrongSource);
  EXPECT_EQ(a.ch.counters().wrong_source, 1u);
  EXPECT_TRUE(a.delivered.empty());
}

TEST(Channel, BuilderAddressedElsewhereOrEmptyIsRejected) {
  End a(1, 2);
  uint8_t buf[kMaxFrameBytes];
  FrameBuilder empty(buf, sizeof buf, a.ch.config().address);
  EXPECT_EQ(a.ch.Send(empty).error(), Error::kInvalidArgument);
  FrameBuilder other(buf, sizeof buf, {kJob, 1, 5});
  ASSERT_TRUE(*other.Add(EbbId{1}, HandlerId{1}, nullptr, 0));
  EXPECT_EQ(a.ch.Send(other).error(), Error::kInvalidArgument);
}

TEST(Channel, RefusedTransmissionStaysPending) {
  End a(1, 2);
  ASSERT_TRUE(a.SendTag(1).ok());
  ASSERT_TRUE(a.SendTag(2).ok());
  int accepted = 0;
  uint64_t next = a.ch.Poll(0, [&](const uint8_t*, size_t) { return accepted++ < 1; });
  EXPECT_EQ(next, 0u);  // more to do now
  EXPECT_EQ(a.ch.counters().frames_sent, 1u);
  EXPECT_EQ(a.ch.counters().transmit_refused, 1u);
  a.Poll(5);
  ASSERT_EQ(a.sent.size(), 1u);
  EXPECT_EQ(HeaderOf(a.sent[0]).seq, 1u);
  EXPECT_EQ(HeaderOf(a.sent[0]).flags & kFlagRetransmit, 0);
}

TEST(Channel, BogusAcksAreIgnored) {
  End a(1, 2), b(2, 1);
  ASSERT_TRUE(a.SendTag(1).ok());
  ASSERT_TRUE(a.SendTag(2).ok());
  a.Poll(0);
  // b claims to have received frames a never sent (b's state is ahead).
  ChannelConfig ahead;
  ahead.initial_recv_seq = 50;
  End liar(2, 1, ahead);
  ASSERT_TRUE(liar.SendTag(1).ok());
  liar.Poll(0);
  EXPECT_EQ(a.Receive(liar.sent[0], 10), DropReason::kNone);
  EXPECT_EQ(a.ch.counters().bad_acks, 1u);
  EXPECT_EQ(a.ch.in_flight(), 2u);
}

}  // namespace
}  // namespace fox::net
