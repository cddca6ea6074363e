// Two reliable channels over a simulated network that loses, duplicates,
// corrupts and reorders datagrams, in simulated time. Every message must
// arrive exactly once and in order, within a bounded simulated time.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <queue>
#include <random>
#include <vector>

#include "fox/net/am_frame.h"
#include "fox/net/reliable.h"

namespace fox::net {
namespace {

constexpr uint64_t kJob = 0xabcdef;
constexpr uint64_t kUs = 1'000;
constexpr uint64_t kMs = 1'000'000;
const SipKey kKey{0x1234, 0x5678};

struct NetParams {
  double loss = 0.05;
  double duplicate = 0.05;
  double corrupt = 0.0;
  uint64_t min_delay_ns = 50 * kUs;
  uint64_t max_delay_ns = 550 * kUs;  // spread of delays reorders frames
};

struct SimParams {
  NetParams net;
  uint64_t messages_ab = 100'000;
  uint64_t messages_ba = 20'000;
  uint32_t initial_seq = 0;
  uint32_t send_window = 128;
  uint32_t recv_window = 128;
  uint64_t seed = 1;
  uint64_t time_limit_ns = 2'000 * kMs;
};

// Message i: ebb and handler derived from i, data = i followed by i % 41
// bytes derived from i, so that every frame carries a different mix.
EbbId EbbOf(uint64_t i) { return EbbId{static_cast<uint32_t>(i * 2654435761u)}; }
HandlerId HandlerOf(uint64_t i) { return HandlerId{static_cast<uint16_t>(i ^ (i >> 16))}; }
size_t LengthOf(uint64_t i) { return 8 + i % 41; }
uint8_t ByteOf(uint64_t i, size_t k) { return static_cast<uint8_t>(i * 131 + k * 7); }

struct Packet {
  uint64_t at;
  uint64_t order;  // ties broken by send order, for determinism
  int to;
  std::vector<uint8_t> bytes;
  bool operator>(const Packet& o) const { return at != o.at ? at > o.at : order > o.order; }
};

class Sim {
 public:
  explicit Sim(const SimParams& p) : p_(p), rng_(p.seed) {
    for (int i = 0; i < 2; ++i) {
      ChannelConfig c;
      c.address = {kJob, static_cast<uint32_t>(i + 1), static_cast<uint32_t>(2 - i)};
      c.key = kKey;
      c.send_window = p.send_window;
      c.recv_window = p.recv_window;
      c.initial_send_seq = p.initial_seq;
      c.initial_recv_seq = p.initial_seq;
      EXPECT_TRUE(node_[i].ch.Init(c).ok());
    }
    node_[0].to_send = p.messages_ab;
    node_[1].to_send = p.messages_ba;
  }

  // Runs until every message is delivered and acknowledged. Returns the
  // simulated time taken.
  uint64_t Run() {
    uint64_t now = 0;
    for (;;) {
      for (int i = 0; i < 2; ++i) Fill(i);
      uint64_t next = kNoDeadline;
      for (int i = 0; i < 2; ++i) {
        uint64_t d = node_[i].ch.Poll(now, [&](const uint8_t* b, size_t n) {
          Transmit(i, b, n, now);
          return true;
        });
        // Poll leaves nothing due: every deadline it returns is in the future.
        if (d <= now) {
          ADD_FAILURE() << "node " << i + 1 << " Poll at " << now << " returned deadline " << d;
          return now;
        }
        if (d < next) next = d;
      }
      if (Done()) return now;
      if (!net_.empty() && net_.top().at < next) next = net_.top().at;
      if (next == kNoDeadline) {
        ADD_FAILURE() << "stuck at " << now << " ns with nothing scheduled";
        return now;
      }
      if (next > p_.time_limit_ns) {
        ADD_FAILURE() << "not done within " << p_.time_limit_ns << " ns";
        return now;
      }
      if (++steps_ > kMaxSteps) {
        ADD_FAILURE() << "more than " << kMaxSteps << " steps";
        return now;
      }
      now = next;
      while (!net_.empty() && net_.top().at <= now) {
        Packet pkt = net_.top();
        net_.pop();
        Arrive(pkt, now);
      }
    }
  }

  void Report(const char* name, uint64_t elapsed) const {
    for (int i = 0; i < 2; ++i) {
      const ChannelCounters& c = node_[i].ch.counters();
      std::printf(
          "%s node %d: %.1f ms simulated; sent %lu, retransmitted %lu (timeouts %lu, fast %lu), "
          "spurious %lu, acks sent %lu; received %lu, buffered %lu, duplicates %lu, out of window %lu; "
          "decode drops %lu; srtt %.0f us\n",
          name, i + 1, elapsed / 1e6, (unsigned long)c.frames_sent, (unsigned long)c.frames_retransmitted,
          (unsigned long)c.timeouts, (unsigned long)c.fast_retransmits, (unsigned long)c.spurious_retransmits,
          (unsigned long)c.acks_sent, (unsigned long)c.frames_received, (unsigned long)c.frames_buffered,
          (unsigned long)c.duplicates, (unsigned long)c.out_of_window, (unsigned long)node_[i].decode_drops.Total(),
          node_[i].ch.srtt_ns() / 1e3);
    }
  }

  struct Node {
    Channel ch;
    uint64_t to_send = 0;
    uint64_t next_to_send = 0;
    uint64_t next_expected = 0;  // of the messages from the other node
    uint64_t frames_delivered = 0;
    uint64_t bad_messages = 0;
    DropCounters decode_drops;
    DropCounters channel_drops;
  };
  Node node_[2];
  size_t datagrams = 0;

 private:
  // Aggregates pending messages into frames while the window allows.
  void Fill(int i) {
    Node& n = node_[i];
    while (n.next_to_send < n.to_send && n.ch.CanSend()) {
      alignas(8) uint8_t buf[kMaxFrameBytes];
      FrameBuilder b(buf, sizeof buf, n.ch.config().address);
      while (n.next_to_send < n.to_send) {
        uint64_t m = n.next_to_send;
        Result<uint8_t*> at = b.Reserve(EbbOf(m), HandlerOf(m), LengthOf(m));
        ASSERT_TRUE(at.ok());
        if (*at == nullptr) break;  // frame full
        std::memcpy(*at, &m, 8);
        for (size_t k = 8; k < LengthOf(m); ++k) (*at)[k] = ByteOf(m, k);
        ++n.next_to_send;
      }
      ASSERT_TRUE(n.ch.Send(b).ok());
    }
  }

  void Transmit(int from, const uint8_t* b, size_t n, uint64_t now) {
    ++datagrams;
    std::uniform_real_distribution<double> u(0, 1);
    if (u(rng_) < p_.net.loss) return;
    int copies = u(rng_) < p_.net.duplicate ? 2 : 1;
    for (int c = 0; c < copies; ++c) {
      std::uniform_int_distribution<uint64_t> delay(p_.net.min_delay_ns, p_.net.max_delay_ns);
      Packet pkt{now + delay(rng_), order_++, 1 - from, std::vector<uint8_t>(b, b + n)};
      if (u(rng_) < p_.net.corrupt) {
        std::uniform_int_distribution<size_t> where(0, n - 1);
        pkt.bytes[where(rng_)] ^= static_cast<uint8_t>(1 + rng_() % 255);
      }
      net_.push(std::move(pkt));
    }
  }

  void Arrive(const Packet& pkt, uint64_t now) {
    Node& n = node_[pkt.to];
    DropReason why;
    Result<FrameView> v =
        DecodeFrame(pkt.bytes.data(), pkt.bytes.size(), kKey, kJob, n.ch.config().address.source, &why);
    if (!v.ok()) {
      n.decode_drops.Add(why);
      return;
    }
    DropReason r = n.ch.OnReceive(*v, now, [&](const FrameView& f) {
      ++n.frames_delivered;
      for (AmMessage m : f) {
        uint64_t i = n.next_expected++;
        uint64_t got;
        std::memcpy(&got, m.data, 8);
        bool ok = got == i && m.ebb == EbbOf(i) && m.handler == HandlerOf(i) && m.length == LengthOf(i);
        for (size_t k = 8; ok && k < m.length; ++k) ok = m.data[k] == ByteOf(i, k);
        if (!ok && n.bad_messages++ == 0) {
          ADD_FAILURE() << "node " << pkt.to + 1 << " expected message " << i << ", got " << got;
        }
      }
    });
    n.channel_drops.Add(r);
  }

  bool Done() const {
    for (int i = 0; i < 2; ++i) {
      if (node_[1 - i].next_expected < node_[i].to_send || node_[i].ch.in_flight() != 0) {
        return false;
      }
    }
    return true;
  }

  SimParams p_;
  std::mt19937_64 rng_;
  std::priority_queue<Packet, std::vector<Packet>, std::greater<Packet>> net_;
  uint64_t order_ = 0;
  static constexpr uint64_t kMaxSteps = 2'000'000;
  uint64_t steps_ = 0;
};

void CheckExactlyOnceInOrder(const Sim& s, const SimParams& p) {
  const uint64_t sent[2] = {p.messages_ab, p.messages_ba};
  for (int i = 0; i < 2; ++i) {
    const Sim::Node& rx = s.node_[1 - i];
    const Sim::Node& tx = s.node_[i];
    EXPECT_EQ(rx.next_expected, sent[i]) << "messages delivered to node " << 2 - i;
    EXPECT_EQ(rx.bad_messages, 0u);
    // Every frame sent was delivered once and acknowledged.
    EXPECT_EQ(rx.frames_delivered, tx.ch.counters().frames_sent);
    EXPECT_EQ(rx.ch.counters().frames_delivered, tx.ch.counters().frames_sent);
    EXPECT_EQ(tx.ch.counters().frames_acked, tx.ch.counters().frames_sent);
    EXPECT_EQ(rx.ch.buffered(), 0u);
    EXPECT_EQ(tx.ch.next_send_seq(), p.initial_seq + static_cast<uint32_t>(tx.ch.counters().frames_sent));
  }
}

TEST(ChannelSimulation, HundredThousandMessagesOverLossyNetwork) {
  SimParams p;
  p.net.corrupt = 0.01;
  Sim s(p);
  uint64_t elapsed = s.Run();
  s.Report("lossy", elapsed);
  CheckExactlyOnceInOrder(s, p);
  // The network really misbehaved, and the channel noticed.
  const ChannelCounters& a = s.node_[0].ch.counters();
  const ChannelCounters& b = s.node_[1].ch.counters();
  EXPECT_GT(a.frames_retransmitted, 0u);
  EXPECT_GT(a.fast_retransmits, 0u);
  EXPECT_GT(b.duplicates, 0u);
  EXPECT_GT(b.frames_buffered, 0u);
  EXPECT_GT(s.node_[1].decode_drops[DropReason::kBadMac], 0u);
  EXPECT_GT(s.node_[1].channel_drops[DropReason::kDuplicate], 0u);
  // Bounded: about 2,900 frames; 128 frames per round trip of ~1 ms.
  EXPECT_LT(elapsed, 500 * kMs);
}

TEST(ChannelSimulation, SequenceNumbersWrapMidStream) {
  SimParams p;
  p.initial_seq = 0xffffffff - 700;  // wraps after ~700 of ~2,900 frames
  p.messages_ab = 100'000;
  p.messages_ba = 5'000;
  p.seed = 2;
  Sim s(p);
  uint64_t elapsed = s.Run();
  s.Report("wrap", elapsed);
  CheckExactlyOnceInOrder(s, p);
  EXPECT_LT(s.node_[0].ch.next_send_seq(), 0x10000u);  // it did wrap
}

TEST(ChannelSimulation, SmallWindowsHeavyLossAndReordering) {
  SimParams p;
  p.net.loss = 0.2;
  p.net.duplicate = 0.1;
  p.net.min_delay_ns = 10 * kUs;
  p.net.max_delay_ns = 3 * kMs;
  p.messages_ab = 20'000;
  p.messages_ba = 20'000;
  p.send_window = 8;
  p.recv_window = 8;
  p.seed = 3;
  p.time_limit_ns = 20'000 * kMs;
  Sim s(p);
  uint64_t elapsed = s.Run();
  s.Report("harsh", elapsed);
  CheckExactlyOnceInOrder(s, p);
  EXPECT_GT(s.node_[1].ch.counters().duplicates, 0u);
}

TEST(ChannelSimulation, PerfectNetworkNeedsNoRetransmission) {
  SimParams p;
  p.net.loss = 0;
  p.net.duplicate = 0;
  p.net.min_delay_ns = p.net.max_delay_ns = 100 * kUs;  // no reordering
  p.messages_ab = 50'000;
  p.messages_ba = 0;
  Sim s(p);
  uint64_t elapsed = s.Run();
  s.Report("perfect", elapsed);
  CheckExactlyOnceInOrder(s, p);
  EXPECT_EQ(s.node_[0].ch.counters().frames_retransmitted, 0u);
  EXPECT_EQ(s.node_[1].ch.counters().duplicates, 0u);
  EXPECT_EQ(s.node_[1].ch.counters().frames_buffered, 0u);
}

}  // namespace
}  // namespace fox::net
