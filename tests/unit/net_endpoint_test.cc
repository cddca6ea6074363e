// The AM endpoint (net/am_endpoint.h) in simulated time: aggregation,
// backpressure, membership and failure detection, bad datagrams, and 100,000 messages between three nodes over a
// network that loses, duplicates and reorders.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <queue>
#include <random>
#include <vector>

#include "fox/net/am_endpoint.h"

namespace fox::net {
namespace {

constexpr uint64_t kUs = 1'000;
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kJob = 77;
const SipKey kKey{0xfeed, 0xbeef};

// ---- a simulated network of endpoints ----

struct NetParams {
  double loss = 0, duplicate = 0;
  uint64_t min_delay_ns = 50 * kUs, max_delay_ns = 50 * kUs;
};

struct Delivered {
  NodeId from;
  uint32_t ebb;
  uint16_t handler;
  std::vector<uint8_t> data;
};

class Cluster {
 public:
  Cluster(int nodes, EndpointConfig base, NetParams net, uint64_t seed = 1) : net_(net), rng_(seed) {
    for (int i = 0; i < nodes; ++i) {
      EndpointConfig c = base;
      c.job = kJob;
      c.key = kKey;
      c.self = NodeId(i + 1);
      eps_.push_back(std::make_unique<AmEndpoint>(c));
      inbox_.emplace_back();
      alive_.push_back(true);
    }
    for (int i = 0; i < nodes; ++i) {
      for (int j = 0; j < nodes; ++j) {
        if (i != j) EXPECT_TRUE(eps_[i]->AddPeer(NodeId(j + 1), uint64_t(j), now_).ok());
      }
    }
  }

  AmEndpoint& ep(int i) { return *eps_[i]; }
  std::vector<Delivered>& inbox(int i) { return inbox_[i]; }
  uint64_t now() const { return now_; }
  void Kill(int i) { alive_[i] = false; }
  uint64_t datagrams() const { return datagrams_; }

  AmEndpoint::TransmitFn Tx(int from) {
    tx_from_ = from;
    return tx_;
  }

  Result<void> Send(int from, int to, uint32_t ebb, uint16_t handler, const std::vector<uint8_t>& d) {
    return eps_[from]->Send(NodeId(to + 1), EbbId{ebb}, HandlerId{handler}, d.data(), d.size(), now_, Tx(from));
  }

  // Runs the network and every endpoint's timers until `until_ns`.
  void RunUntil(uint64_t until_ns, std::vector<std::pair<NodeId, PeerState>>* changes = nullptr) {
    while (now_ < until_ns) {
      uint64_t next = until_ns;
      for (size_t i = 0; i < eps_.size(); ++i) {
        if (!alive_[i]) continue;
        uint64_t d = eps_[i]->Poll(now_, Tx(int(i)), [&](NodeId n, PeerState s) {
          if (changes != nullptr) changes->emplace_back(n, s);
          if (on_state) on_state(int(i), n, s);
        });
        if (d < next) next = d;
      }
      if (!wire_.empty() && wire_.top().at < next) next = wire_.top().at;
      if (next <= now_) next = now_ + 1;
      now_ = next;
      while (!wire_.empty() && wire_.top().at <= now_) {
        Packet p = wire_.top();
        wire_.pop();
        if (!alive_[p.to]) continue;
        eps_[p.to]->OnDatagram(
            p.bytes.data(), p.bytes.size(), now_,
            [&](NodeId from, const AmMessage& m) {
              inbox_[p.to].push_back(
                  {from, Raw(m.ebb), Raw(m.handler), std::vector<uint8_t>(m.data, m.data + m.length)});
              if (on_deliver) on_deliver(p.to, inbox_[p.to].back());
            },
            Tx(p.to));
      }
    }
  }

  // Injects raw bytes to node `to`.
  DropReason Inject(int to, const std::vector<uint8_t>& bytes) {
    return eps_[to]->OnDatagram(
        bytes.data(), bytes.size(), now_, [&](NodeId, const AmMessage&) { ADD_FAILURE() << "delivered a bad frame"; },
        Tx(to));
  }

  std::vector<std::vector<uint8_t>> captured;  // every datagram sent, when capture is on
  // Called inside delivery (where a handler would send its reply).
  std::function<void(int node, const Delivered& d)> on_deliver;
  // Called with what each node's Poll reports.
  std::function<void(int node, NodeId peer, PeerState state)> on_state;
  bool capture = false;
  int dropping_to = -1;  // frames to this node are lost before the wire (a platform without its address yet)

 private:
  struct Packet {
    uint64_t at, order;
    int to;
    std::vector<uint8_t> bytes;
    bool operator>(const Packet& o) const { return at != o.at ? at > o.at : order > o.order; }
  };

  bool Transmit(uint64_t address, const uint8_t* f, size_t n) {
    ++datagrams_;
    if (!alive_[tx_from_]) return true;
    if (capture) captured.emplace_back(f, f + n);
    if (int(address) == dropping_to) return true;
    std::uniform_real_distribution<double> u(0, 1);
    if (u(rng_) < net_.loss) return true;
    int copies = u(rng_) < net_.duplicate ? 2 : 1;
    for (int c = 0; c < copies; ++c) {
      std::uniform_int_distribution<uint64_t> delay(net_.min_delay_ns, net_.max_delay_ns);
      wire_.push({now_ + delay(rng_), order_++, int(address), std::vector<uint8_t>(f, f + n)});
    }
    return true;
  }

  NetParams net_;
  std::mt19937_64 rng_;
  std::vector<std::unique_ptr<AmEndpoint>> eps_;
  std::vector<std::vector<Delivered>> inbox_;
  std::vector<bool> alive_;
  std::priority_queue<Packet, std::vector<Packet>, std::greater<>> wire_;
  uint64_t now_ = 1;
  uint64_t order_ = 0;
  uint64_t datagrams_ = 0;
  int tx_from_ = 0;
  std::function<bool(uint64_t, const uint8_t*, size_t)> tx_fn_ = [this](uint64_t a, const uint8_t* f, size_t n) {
    return Transmit(a, f, n);
  };
  // A FunctionRef to the member above; stays valid for the cluster's life.
  AmEndpoint::TransmitFn tx_{tx_fn_};
};

std::vector<uint8_t> Payload(uint64_t i, size_t len) {
  std::vector<uint8_t> d(len);
  for (size_t k = 0; k < len; ++k) d[k] = uint8_t(i * 31 + k);
  if (len >= 8) std::memcpy(d.data(), &i, 8);
  return d;
}

EndpointConfig Quiet() {
  EndpointConfig c;
  c.detect_failures = false;  // no probes unless a test wants them
  return c;
}

TEST(AmEndpoint, AggregatesSmallMessagesIntoFewFrames) {
  Cluster c(2, Quiet(), {});
  c.capture = true;
  for (uint64_t i = 0; i < 1000; ++i) ASSERT_TRUE(c.Send(0, 1, 5, 1, Payload(i, 32)).ok()) << i;
  c.RunUntil(c.now() + 20 * kMs);
  ASSERT_EQ(c.inbox(1).size(), 1000u);
  for (uint64_t i = 0; i < 1000; ++i) EXPECT_EQ(c.inbox(1)[i].data, Payload(i, 32)) << i;
  // 32-byte messages take 40 bytes of a 1416-byte payload: 35 per frame.
  uint64_t frames = c.ep(0).counters().frames_flushed;
  EXPECT_LE(frames, 1000u / 35 + 2);
  EXPECT_GE(c.ep(0).counters().flush_on_full, 1000u / 35 - 1);
}

TEST(AmEndpoint, RepliesLeaveAtTheEndOfTheFrameThatAskedForThem) {
  EndpointConfig cfg = Quiet();
  cfg.flush_delay_ns = 10 * kMs;  // long: only the reply rule can explain a fast answer
  Cluster c(2, cfg, {});
  c.RunUntil(c.now() + 1 * kMs);
  c.on_deliver = [&](int node, const Delivered& d) {
    if (node == 1 && d.handler == 1) ASSERT_TRUE(c.Send(1, 0, 5, 2, d.data).ok());
  };
  uint64_t frames = c.ep(1).counters().frames_flushed;
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(c.Send(0, 1, 5, 1, Payload(i, 16)).ok());
  c.ep(0).Flush(AmEndpoint::kAnyPeer, c.now(), c.Tx(0));
  c.RunUntil(c.now() + 200 * kUs);  // 50 us each way
  ASSERT_EQ(c.inbox(0).size(), 3u);
  for (uint64_t i = 0; i < 3; ++i) EXPECT_EQ(c.inbox(0)[i].data, Payload(i, 16));
  EXPECT_EQ(c.ep(1).counters().frames_flushed, frames + 1);  // three replies, one frame
}

TEST(AmEndpoint, UnaggregatedSendsOneFramePerMessage) {
  EndpointConfig cfg = Quiet();
  cfg.aggregate = false;
  Cluster c(2, cfg, {});
  for (uint64_t i = 0; i < 100; ++i) ASSERT_TRUE(c.Send(0, 1, 5, 1, Payload(i, 32)).ok());
  c.RunUntil(c.now() + 20 * kMs);
  EXPECT_EQ(c.inbox(1).size(), 100u);
  EXPECT_EQ(c.ep(0).counters().frames_flushed, 100u);
}

TEST(AmEndpoint, FlushDelayBoundsTheWaitOfALoneMessage) {
  EndpointConfig cfg = Quiet();
  cfg.flush_delay_ns = 200 * kUs;
  Cluster c(2, cfg, {});
  ASSERT_TRUE(c.Send(0, 1, 9, 2, Payload(1, 16)).ok());
  c.RunUntil(c.now() + 150 * kUs);
  EXPECT_TRUE(c.inbox(1).empty());  // still waiting for company
  c.RunUntil(c.now() + 200 * kUs);  // flushed at 200 us, 50 us on the wire
  ASSERT_EQ(c.inbox(1).size(), 1u);
  EXPECT_EQ(c.inbox(1)[0].ebb, 9u);
  EXPECT_EQ(c.inbox(1)[0].handler, 2);
  EXPECT_GE(c.ep(0).counters().flush_on_timeout, 1u);
}

TEST(AmEndpoint, BackpressureWhenTheWindowIsFull) {
  EndpointConfig cfg = Quiet();
  cfg.channel.send_window = 4;
  cfg.channel.recv_window = 4;
  Cluster c(2, cfg, {});
  uint64_t sent = 0;
  Result<void> r{};
  while ((r = c.Send(0, 1, 5, 1, Payload(sent, 1000))).ok()) ++sent;
  EXPECT_EQ(r.error(), Error::kBusy);
  EXPECT_EQ(sent, 5u);  // 4 frames in the window + 1 in the aggregation buffer
  EXPECT_FALSE(c.ep(0).CanSend(2, 1000));
  // Past the flush delay, a buffer held back by the full window must not ask
  // for an immediate Poll (the driver would spin instead of reading acks).
  uint64_t later = c.now() + 1 * kMs;
  EXPECT_GT(c.ep(0).Poll(later, c.Tx(0), [](NodeId, PeerState) {}), later);
  c.RunUntil(c.now() + 10 * kMs);
  EXPECT_TRUE(c.ep(0).CanSend(2, 1000));
  ASSERT_TRUE(c.Send(0, 1, 5, 1, Payload(sent++, 1000)).ok());
  c.RunUntil(c.now() + 10 * kMs);
  EXPECT_EQ(c.inbox(1).size(), sent);
}

// SendOrDefer: what finds the window full waits in the deferred buffer,
// in order; plain Sends cannot overtake it.
TEST(AmEndpoint, SendOrDeferParksMessagesInOrderWhileTheWindowIsFull) {
  EndpointConfig cfg = Quiet();
  cfg.channel.send_window = 4;
  cfg.channel.recv_window = 4;
  Cluster c(2, cfg, {});
  auto defer = [&](uint64_t i) {
    std::vector<uint8_t> d = Payload(i, 1000);
    return c.ep(0).SendOrDefer(2, EbbId{5}, HandlerId{1}, d.data(), d.size(), c.now(), c.Tx(0));
  };
  for (uint64_t i = 0; i < 40; ++i) ASSERT_TRUE(defer(i).ok()) << i;
  EXPECT_EQ(c.ep(0).deferred_messages(), 35u);  // 4 frames in the window + 1 in the buffer went straight on
  EXPECT_EQ(c.ep(0).counters().deferred, 35u);
  EXPECT_EQ(c.ep(0).counters().send_busy, 0u);
  EXPECT_FALSE(c.ep(0).CanSend(2, 8));
  EXPECT_EQ(c.Send(0, 1, 5, 1, Payload(99, 8)).error(), Error::kBusy);  // would overtake
  c.RunUntil(c.now() + 50 * kMs);
  EXPECT_EQ(c.ep(0).deferred_messages(), 0u);
  EXPECT_TRUE(c.ep(0).CanSend(2, 8));
  ASSERT_TRUE(c.Send(0, 1, 5, 1, Payload(40, 1000)).ok());
  c.RunUntil(c.now() + 10 * kMs);
  ASSERT_EQ(c.inbox(1).size(), 41u);
  for (uint64_t i = 0; i <= 40; ++i) EXPECT_EQ(c.inbox(1)[i].data, Payload(i, 1000)) << i;
  EXPECT_EQ(c.ep(0).counters().deferred_full, 0u);
}

TEST(AmEndpoint, SendOrDeferIsBusyOnlyWhenTheDeferredBufferIsFull) {
  EndpointConfig cfg = Quiet();
  cfg.channel.send_window = 2;
  cfg.channel.recv_window = 2;
  cfg.deferred_bytes = 4096;  // four 1000-byte messages (1024 bytes of record each)
  Cluster c(2, cfg, {});
  uint64_t accepted = 0;
  Result<void> r{};
  for (;;) {
    std::vector<uint8_t> d = Payload(accepted, 1000);
    r = c.ep(0).SendOrDefer(2, EbbId{5}, HandlerId{1}, d.data(), d.size(), c.now(), c.Tx(0));
    if (!r.ok()) break;
    ++accepted;
  }
  EXPECT_EQ(r.error(), Error::kBusy);
  EXPECT_EQ(accepted, 3u + 4u);  // 2 frames in the window, 1 in the buffer, 4 deferred
  EXPECT_EQ(c.ep(0).counters().deferred_full, 1u);
  // The ring wraps: keep it busy well past its size, in order throughout.
  while (accepted < 200) {
    c.RunUntil(c.now() + 200 * kUs);
    for (;;) {
      std::vector<uint8_t> d = Payload(accepted, 1000);
      if (!c.ep(0).SendOrDefer(2, EbbId{5}, HandlerId{1}, d.data(), d.size(), c.now(), c.Tx(0)).ok()) break;
      ++accepted;
    }
  }
  c.RunUntil(c.now() + 50 * kMs);
  ASSERT_EQ(c.inbox(1).size(), accepted);
  for (uint64_t i = 0; i < accepted; ++i) EXPECT_EQ(c.inbox(1)[i].data, Payload(i, 1000)) << i;
  EXPECT_GT(c.ep(0).counters().deferred, 100u);
}

// A peer that never acknowledges does not hold up deferred messages to
// another; when it is declared dead, its deferred messages are dropped.
TEST(AmEndpoint, ASilentPeerDoesNotHoldUpAnothersDeferredMessages) {
  EndpointConfig cfg = Quiet();
  cfg.channel.send_window = 2;
  cfg.channel.recv_window = 2;
  Cluster c(3, cfg, {});
  c.Kill(1);  // node 2 hears nothing, says nothing
  for (uint64_t i = 0; i < 20; ++i) {
    for (NodeId to : {NodeId(2), NodeId(3)}) {
      std::vector<uint8_t> d = Payload(i, 1000);
      ASSERT_TRUE(c.ep(0).SendOrDefer(to, EbbId{5}, HandlerId{1}, d.data(), d.size(), c.now(), c.Tx(0)).ok());
    }
  }
  c.RunUntil(c.now() + 100 * kMs);
  ASSERT_EQ(c.inbox(2).size(), 20u);  // node 3 got everything
  for (uint64_t i = 0; i < 20; ++i) EXPECT_EQ(c.inbox(2)[i].data, Payload(i, 1000)) << i;
  EXPECT_EQ(c.ep(0).deferred_messages(), 17u);  // node 2's: 3 went out, the rest wait
  c.ep(0).DeclareDead(2, [](NodeId, PeerState) {});
  c.RunUntil(c.now() + 1 * kMs);
  EXPECT_EQ(c.ep(0).deferred_messages(), 0u);
  EXPECT_EQ(c.ep(0).counters().deferred_dropped, 17u);
  EXPECT_EQ(c.ep(0).SendOrDefer(2, EbbId{5}, HandlerId{1}, "x", 1, c.now(), c.Tx(0)).error(), Error::kPeerDead);
}

// Replies sent in delivery context with SendOrDefer over a lossy network
// with small windows: every request answered once, in order.
TEST(AmEndpoint, RepliesInDeliveryContextThroughALossyNetwork) {
  EndpointConfig cfg = Quiet();
  cfg.channel.send_window = 8;
  cfg.channel.recv_window = 8;
  NetParams net{.loss = 0.05, .duplicate = 0.05, .min_delay_ns = 20 * kUs, .max_delay_ns = 400 * kUs};
  Cluster c(2, cfg, net, 9);
  uint64_t refused = 0;
  c.on_deliver = [&](int node, const Delivered& d) {
    if (node != 1) return;
    if (!c.ep(1).SendOrDefer(1, EbbId{6}, HandlerId{2}, d.data.data(), d.data.size(), c.now(), c.Tx(1)).ok()) ++refused;
  };
  // The requester keeps at most 256 requests unanswered: that bounds what
  // the replies can need of the deferred buffer (256 * 332 bytes < 256 KiB).
  constexpr uint64_t kRequests = 20'000, kOutstanding = 256;
  uint64_t sent = 0;
  while (sent < kRequests) {
    while (sent < kRequests && sent < c.inbox(0).size() + kOutstanding &&
           c.Send(0, 1, 5, 1, Payload(sent, 8 + sent % 300)).ok()) {
      ++sent;
    }
    c.RunUntil(c.now() + 100 * kUs);
  }
  c.RunUntil(c.now() + 2000 * kMs);
  EXPECT_EQ(refused, 0u) << "deferred " << c.ep(1).counters().deferred << " full " << c.ep(1).counters().deferred_full
                         << " waiting " << c.ep(1).deferred_messages() << " inbox1 " << c.inbox(1).size();
  ASSERT_EQ(c.inbox(0).size(), kRequests);
  for (uint64_t i = 0; i < kRequests; ++i) ASSERT_EQ(c.inbox(0)[i].data, Payload(i, 8 + i % 300)) << i;
  EXPECT_GT(c.ep(1).counters().deferred, 0u);  // the replies did meet a full window
  EXPECT_EQ(c.ep(1).deferred_messages(), 0u);
}

// A frame the driver does not admit (no receiver yet) is dropped without an
// ack: the sender retransmits it until it is admitted, then it is delivered
// once, in order.
TEST(AmEndpoint, FramesRefusedByAdmitAreRetransmittedUntilAdmitted) {
  Cluster c(2, Quiet(), {});
  c.capture = true;
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(c.Send(0, 1, 5, 1, Payload(i, 40)).ok());
  c.ep(0).Flush(AmEndpoint::kAnyPeer, c.now(), c.Tx(0));
  ASSERT_FALSE(c.captured.empty());
  std::vector<uint8_t> frame = c.captured.back();
  int asked = 0;
  bool open = false;
  auto admit = [&](const FrameView& f) {
    ++asked;
    for (AmMessage m : f) EXPECT_EQ(m.ebb, EbbId{5});
    return open;
  };
  AmEndpoint::AdmitFn admit_fn(admit);
  auto deliver = [&](NodeId, const AmMessage&) { ADD_FAILURE() << "delivered while refused"; };
  EXPECT_EQ(c.ep(1).OnDatagram(frame.data(), frame.size(), c.now(), deliver, c.Tx(1), &admit_fn),
            DropReason::kNoReceiverYet);
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(c.ep(1).counters().drops[DropReason::kNoReceiverYet], 1u);
  EXPECT_EQ(c.ep(1).ChannelTo(1)->counters().frames_delivered, 0u);
  // Admitted later (the receiver registered): delivered exactly once.
  open = true;
  int delivered = 0;
  auto deliver_ok = [&](NodeId from, const AmMessage& m) {
    EXPECT_EQ(from, 1u);
    EXPECT_EQ(std::vector<uint8_t>(m.data, m.data + m.length), Payload(uint64_t(delivered), 40));
    ++delivered;
  };
  EXPECT_EQ(c.ep(1).OnDatagram(frame.data(), frame.size(), c.now(), deliver_ok, c.Tx(1), &admit_fn), DropReason::kNone);
  EXPECT_EQ(delivered, 3);
  EXPECT_EQ(c.ep(1).OnDatagram(frame.data(), frame.size(), c.now(), deliver_ok, c.Tx(1), &admit_fn),
            DropReason::kDuplicate);
  EXPECT_EQ(delivered, 3);
}

// Natively, frames to a peer whose MAC is not known yet are dropped before
// the wire; once it is, ResendDropped sends them again at once: the messages
// arrive within the network's delay, not after the first RTO (100 ms).
TEST(AmEndpoint, FramesDroppedForWantOfAnAddressGoAgainOnceItIsKnown) {
  Cluster c(3, Quiet(), {});
  c.dropping_to = 2;
  for (uint64_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.Send(0, 2, 5, 1, Payload(i, 40)).ok());
    ASSERT_TRUE(c.Send(0, 1, 5, 1, Payload(i, 40)).ok());
  }
  c.RunUntil(2 * kMs);
  EXPECT_EQ(c.inbox(1).size(), 3u);
  EXPECT_TRUE(c.inbox(2).empty());
  uint64_t known = c.now();  // node 2's address is known from here on
  c.dropping_to = -1;
  std::vector<uint64_t> asked;
  EXPECT_EQ(c.ep(0).ResendDropped([&](uint64_t address) {
    asked.push_back(address);
    return address == 2 ? known : 0;
  }),
            1u);  // the three messages went in one frame
  std::sort(asked.begin(), asked.end());
  EXPECT_EQ(asked, (std::vector<uint64_t>{1, 2}));
  c.RunUntil(known + 1 * kMs);
  ASSERT_EQ(c.inbox(2).size(), 3u);
  for (uint64_t i = 0; i < 3; ++i) EXPECT_EQ(c.inbox(2)[i].data, Payload(i, 40));
  const ChannelCounters& to2 = c.ep(0).ChannelTo(3)->counters();
  EXPECT_EQ(to2.resent_dropped, 1u);
  EXPECT_EQ(to2.timeouts, 0u);
  EXPECT_EQ(c.ep(0).ChannelTo(2)->counters().resent_dropped, 0u);  // node 1 had them all
  EXPECT_EQ(c.ep(2).ChannelTo(1)->counters().duplicates, 0u);
}

TEST(AmEndpoint, RejectsBadArguments) {
  Cluster c(2, Quiet(), {});
  std::vector<uint8_t> big(kMaxMessageBytes + 1);
  EXPECT_EQ(c.Send(0, 1, 5, 1, big).error(), Error::kOutOfRange);
  EXPECT_EQ(c.ep(0).Send(99, EbbId{5}, HandlerId{1}, "x", 1, c.now(), c.Tx(0)).error(), Error::kPeerDead);
  EXPECT_EQ(c.ep(0).AddPeer(1, 0, c.now()).error(), Error::kInvalidArgument);  // itself
  EXPECT_EQ(c.ep(0).AddPeer(2, 1, c.now()).error(), Error::kAlreadyExists);
  std::vector<uint8_t> max(kMaxMessageBytes, 7);
  EXPECT_TRUE(c.Send(0, 1, 5, 1, max).ok());
  c.RunUntil(c.now() + 10 * kMs);
  ASSERT_EQ(c.inbox(1).size(), 1u);
  EXPECT_EQ(c.inbox(1)[0].data, max);
}

TEST(AmEndpoint, DropsBadDatagramsAndCountsThem) {
  Cluster c(3, Quiet(), {});
  c.capture = true;
  ASSERT_TRUE(c.Send(0, 1, 5, 1, Payload(1, 24)).ok());
  c.ep(0).Flush(AmEndpoint::kAnyPeer, c.now(), c.Tx(0));
  ASSERT_FALSE(c.captured.empty());
  std::vector<uint8_t> good = c.captured[0];
  EXPECT_EQ(c.Inject(1, {}), DropReason::kTruncated);
  EXPECT_EQ(c.Inject(1, std::vector<uint8_t>(good.begin(), good.begin() + 30)), DropReason::kTruncated);
  std::vector<uint8_t> bad = good;
  bad[0] ^= 1;
  EXPECT_EQ(c.Inject(1, bad), DropReason::kBadMagic);
  bad = good;
  bad.back() ^= 0x40;
  EXPECT_EQ(c.Inject(1, bad), DropReason::kBadMac);
  EXPECT_EQ(c.Inject(2, good), DropReason::kWrongDestination);  // node 3 is not its destination
  EXPECT_EQ(c.Inject(1, std::vector<uint8_t>(5000, 0)), DropReason::kOversized);
  EXPECT_EQ(c.ep(1).counters().drops.Total(), 5u);
  // The good frame still gets through, exactly once, replays are duplicates.
  c.RunUntil(c.now() + 10 * kMs);
  ASSERT_EQ(c.inbox(1).size(), 1u);
  EXPECT_EQ(c.Inject(1, good), DropReason::kDuplicate);
  EXPECT_EQ(c.inbox(1).size(), 1u);
}

// A frame with one message from node 50, a node of the job that node 2
// does not know.
std::vector<uint8_t> FrameFromAStranger() {
  EndpointConfig cfg = Quiet();
  cfg.job = kJob;
  cfg.key = kKey;
  cfg.self = 50;
  AmEndpoint stranger(cfg);
  EXPECT_TRUE(stranger.AddPeer(2, 0, 0).ok());
  std::vector<uint8_t> frame;
  auto tx = [&](uint64_t, const uint8_t* f, size_t n) {
    frame.assign(f, f + n);
    return true;
  };
  EXPECT_TRUE(stranger.Send(2, EbbId{5}, HandlerId{1}, "hi", 2, 0, tx).ok());
  stranger.Flush(AmEndpoint::kAnyPeer, 0, tx);
  return frame;
}

TEST(AmEndpoint, FrameFromANodeThatIsNotAPeerIsDropped) {
  Cluster c(2, Quiet(), {});
  EXPECT_EQ(c.Inject(1, FrameFromAStranger()), DropReason::kUnknownPeer);
}

// A job that grows: a node that is not a peer but speaks with the job's key
// is recorded as a join (the driver adds it), once however often it speaks;
// a forged or other-job frame is not; a node once dead is not a stranger.
TEST(AmEndpoint, AValidFrameFromAStrangerIsAJoinAndAForgedOneIsNot) {
  std::vector<uint8_t> frame = FrameFromAStranger();
  EndpointConfig mine = Quiet();
  mine.job = kJob;
  mine.key = kKey;
  mine.self = 2;
  AmEndpoint ep(mine);
  auto deliver = [](NodeId, const AmMessage&) { ADD_FAILURE() << "delivered before it joined"; };
  auto none = [](uint64_t, const uint8_t*, size_t) { return true; };
  std::vector<uint8_t> forged = frame;
  forged[forged.size() - 1] ^= 1;  // the MAC
  EXPECT_EQ(ep.OnDatagram(forged.data(), forged.size(), 0, deliver, none, nullptr, 0x7F0000010BB8ull),
            DropReason::kBadMac);
  EXPECT_FALSE(ep.joins_pending());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(ep.OnDatagram(frame.data(), frame.size(), 0, deliver, none, nullptr, 0x7F0000010BB8ull),
              DropReason::kUnknownPeer);
  }
  AmEndpoint::Join joins[4];
  ASSERT_EQ(ep.TakeJoins(joins, 4), 1u);
  EXPECT_EQ(joins[0].node, 50u);
  EXPECT_EQ(joins[0].address, 0x7F0000010BB8ull);
  EXPECT_FALSE(ep.joins_pending());
  // Added, its retransmission gets through.
  ASSERT_TRUE(ep.AddPeer(50, joins[0].address, 0).ok());
  int delivered = 0;
  EXPECT_EQ(ep.OnDatagram(
                frame.data(), frame.size(), 0, [&](NodeId from, const AmMessage&) { delivered += from == 50; }, none,
                nullptr, joins[0].address),
            DropReason::kNone);
  EXPECT_EQ(delivered, 1);
  // Declared dead, it stays so: its frames are no join any more.
  ep.DeclareDead(50, [](NodeId, PeerState) {});
  (void)ep.Poll(0, none, [](NodeId, PeerState) {});
  EXPECT_NE(ep.OnDatagram(frame.data(), frame.size(), 0, deliver, none, nullptr, joins[0].address), DropReason::kNone);
  EXPECT_FALSE(ep.joins_pending());
}

TEST(AmEndpoint, ProbesKeepPeersAliveAndASilentPeerDies) {
  EndpointConfig cfg;  // the membership's defaults: probe 150 ms, suspicion 1 s
  Cluster c(3, cfg, {});
  std::vector<std::pair<NodeId, PeerState>> changes;
  c.RunUntil(5000 * kMs, &changes);
  EXPECT_TRUE(changes.empty());
  const MembershipCounters& m = c.ep(0).membership().counters();
  EXPECT_GE(m.probes, 30u);  // one every 150 ms
  EXPECT_LE(m.probes, 35u);
  EXPECT_GE(m.acks_sent, 25u);  // it answers the others' probes of it (half of theirs)
  EXPECT_EQ(m.probes_failed, 0u);
  EXPECT_EQ(c.ep(0).State(3), PeerState::kAlive);
  uint64_t killed_at = c.now();
  c.Kill(2);
  // Probed within 2 periods, suspected at the end of that period, dead one
  // suspicion later: under 1.5 s.
  c.RunUntil(killed_at + 1500 * kMs, &changes);
  uint64_t suspected = 0, dead = 0;
  for (auto& [n, s] : changes) {
    EXPECT_EQ(n, 3u);
    if (s == PeerState::kSuspected) ++suspected;
    if (s == PeerState::kDead) ++dead;
  }
  EXPECT_EQ(dead, 2u);       // node 3 declared dead by both others, once each
  EXPECT_GE(suspected, 1u);  // by the one whose probe failed (the other may hear the notice first)
  EXPECT_EQ(c.ep(0).State(3), PeerState::kDead);
  EXPECT_EQ(c.ep(1).State(3), PeerState::kDead);
  EXPECT_EQ(c.ep(0).State(2), PeerState::kAlive);
  // Dead is final: sends fail, and its frames are dropped.
  EXPECT_EQ(c.Send(0, 2, 5, 1, Payload(1, 8)).error(), Error::kPeerDead);
}

// Linger's question (am::Linger waits on it before a node ends): settled once
// every frame that carried a message is acknowledged, retransmissions
// included; membership pings to a peer that ended first, which nobody
// answers, do not hold a node back; a dead peer's frames are given up.
TEST(AmEndpoint, SettledWhenEveryMessageIsAcknowledgedNotWhenOnlyPingsWait) {
  EndpointConfig cfg;
  Cluster c(3, cfg, {.loss = 0.5});
  EXPECT_TRUE(c.ep(0).Settled());
  ASSERT_TRUE(c.Send(0, 1, 5, 1, Payload(1, 16)).ok());
  EXPECT_FALSE(c.ep(0).Settled());  // in the aggregation buffer
  c.ep(0).Flush(AmEndpoint::kAnyPeer, c.now(), c.Tx(0));
  EXPECT_FALSE(c.ep(0).Settled());  // sent, not acknowledged
  uint64_t start = c.now();
  while (!c.ep(0).Settled() && c.now() < start + 2000 * kMs) c.RunUntil(c.now() + kMs);
  EXPECT_TRUE(c.ep(0).Settled());
  ASSERT_EQ(c.inbox(1).size(), 1u);
  // Node 3 ends: node 1's probes of it go unanswered, and it stays settled.
  c.Kill(2);
  c.RunUntil(c.now() + 400 * kMs);  // a few probe periods, less than the suspicion
  EXPECT_GE(c.ep(0).membership().counters().pings_sent, 1u);
  EXPECT_NE(c.ep(0).State(3), PeerState::kDead);
  EXPECT_TRUE(c.ep(0).Settled());
  // A message to it waits for an answer that never comes, until it is dead.
  ASSERT_TRUE(c.Send(0, 2, 5, 1, Payload(2, 16)).ok());
  c.ep(0).Flush(AmEndpoint::kAnyPeer, c.now(), c.Tx(0));
  c.RunUntil(c.now() + 200 * kMs);
  EXPECT_FALSE(c.ep(0).Settled());
  c.ep(0).DeclareDead(3, [](NodeId, PeerState) {});
  EXPECT_TRUE(c.ep(0).Settled());
}

// The membership through real channels: sixteen nodes over a network that
// loses 3% of datagrams for 30 s see no death and pay a flat cost per node
// (a probe per period, whatever the job's size); then a node stops and
// every other one learns it within the bound (a probe period, the
// suspicion, the notice).
TEST(AmEndpoint, SixteenNodesUnderLossSeeNoFalseDeathAndEveryoneSeesARealOne) {
  EndpointConfig cfg;
  NetParams net{.loss = 0.03, .min_delay_ns = 50 * kUs, .max_delay_ns = 500 * kUs};
  Cluster c(16, cfg, net, 3);
  std::vector<std::pair<NodeId, PeerState>> changes;
  c.RunUntil(30'000 * kMs, &changes);
  for (auto& [n, st] : changes) EXPECT_NE(st, PeerState::kDead) << "node " << n;
  uint64_t fd = 0;
  for (int i = 0; i < 16; ++i) {
    const MembershipCounters& m = c.ep(i).membership().counters();
    fd += m.pings_sent + m.acks_sent + m.ping_reqs_sent;
  }
  double per_node_s = double(fd) / 16 / 30;
  EXPECT_LT(per_node_s, 20);  // ~6.7 pings and as many acks per second at 150 ms
  EXPECT_GT(per_node_s, 10);
  changes.clear();
  uint64_t killed_at = c.now();
  c.Kill(7);  // node id 8
  c.RunUntil(killed_at + 2000 * kMs, &changes);
  int dead = 0;
  for (auto& [n, st] : changes) {
    if (st != PeerState::kDead) continue;
    EXPECT_EQ(n, 8u);
    ++dead;
  }
  EXPECT_EQ(dead, 15);
  for (int i = 0; i < 16; ++i) {
    if (i != 7) EXPECT_EQ(c.ep(i).State(8), PeerState::kDead) << i;
  }
}

TEST(AmEndpoint, DeadPeersLateFramesAreDropped) {
  Cluster c(2, Quiet(), {});
  c.capture = true;
  ASSERT_TRUE(c.Send(1, 0, 5, 1, Payload(1, 8)).ok());
  c.ep(1).Flush(AmEndpoint::kAnyPeer, c.now(), c.Tx(1));
  std::vector<uint8_t> late = c.captured.back();
  int notified = 0;
  c.ep(0).DeclareDead(2, [&](NodeId n, PeerState s) {
    EXPECT_EQ(n, 2u);
    EXPECT_EQ(s, PeerState::kDead);
    ++notified;
  });
  c.ep(0).DeclareDead(2, [&](NodeId, PeerState) { ++notified; });  // idempotent
  EXPECT_EQ(notified, 1);
  EXPECT_EQ(c.Inject(0, late), DropReason::kPeerClosed);
  EXPECT_TRUE(c.inbox(0).empty());
}

// A death notice: node 1 says node 3 died (node 3 is in fact alive and
// answering probes); node 2 declares it dead at its next Poll, long before any
// detector would, and drops what node 3 still sends.
TEST(AmEndpoint, DeathNoticesAreBelievedAtOnce) {
  EndpointConfig cfg;
  cfg.membership.suspicion_ns = 1'000'000 * kMs;  // no detector would declare it
  Cluster c(3, cfg, {});
  c.RunUntil(c.now() + 500 * kMs);
  std::vector<std::pair<NodeId, PeerState>> told;
  c.ep(0).NotifyDead(3, c.now(), c.Tx(0), [&](NodeId n, PeerState s) { told.emplace_back(n, s); });
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(told[0], std::make_pair(NodeId(3), PeerState::kDead));
  EXPECT_EQ(c.ep(0).counters().dead_notices_sent, 1u);  // node 2 (node 3 is dead to us now)
  std::vector<std::pair<NodeId, PeerState>> changes;
  uint64_t t0 = c.now();
  while (c.ep(1).State(3) != PeerState::kDead && c.now() < t0 + 50 * kMs) c.RunUntil(c.now() + 100 * kUs, &changes);
  EXPECT_EQ(c.ep(1).State(3), PeerState::kDead);
  EXPECT_LT(c.now() - t0, 2 * kMs);  // one trip on the wire
  EXPECT_EQ(c.ep(1).counters().dead_notices_received, 1u);
  ASSERT_FALSE(changes.empty());
  EXPECT_EQ(changes.back(), std::make_pair(NodeId(3), PeerState::kDead));
  EXPECT_EQ(c.Send(1, 2, 5, 1, Payload(1, 8)).error(), Error::kPeerDead);
  EXPECT_EQ(c.ep(1).State(1), PeerState::kAlive);  // nobody else
  // Fail-stop: node 3 is out of the job; what it still sends is dropped.
  uint64_t closed = c.ep(1).counters().drops[DropReason::kPeerClosed];
  ASSERT_TRUE(c.Send(2, 1, 5, 1, Payload(2, 8)).ok());
  c.RunUntil(c.now() + 10 * kMs);
  EXPECT_GT(c.ep(1).counters().drops[DropReason::kPeerClosed], closed);
  for (const Delivered& d : c.inbox(1)) EXPECT_NE(d.from, 3u);
}

// Fail-stop for the node itself: node 3, declared dead by the job while it
// runs, still sends; the node it sends to answers with a fence frame (at most
// one per 500 ms), and node 3's next Poll reports itself dead, once (the
// driver stops the node: am's Fenced).
TEST(AmEndpoint, ANodeTheJobHoldsDeadIsToldSoWhenItSpeaks) {
  EndpointConfig cfg;
  cfg.membership.suspicion_ns = 1'000'000 * kMs;  // no detector would declare it
  Cluster c(3, cfg, {});
  c.RunUntil(c.now() + 500 * kMs);
  c.ep(0).NotifyDead(3, c.now(), c.Tx(0), [](NodeId, PeerState) {});
  c.RunUntil(c.now() + 2 * kMs);
  ASSERT_EQ(c.ep(1).State(3), PeerState::kDead);
  EXPECT_FALSE(c.ep(2).fenced());
  int reported = 0;
  c.on_state = [&](int node, NodeId peer, PeerState s) {
    if (node == 2 && peer == 3) {
      EXPECT_EQ(s, PeerState::kDead);
      ++reported;
    }
  };
  for (int i = 0; i < 5; ++i) {  // five frames in 50 ms: one fence back
    ASSERT_TRUE(c.Send(2, 0, 5, 1, Payload(i, 8)).ok());
    c.ep(2).Flush(AmEndpoint::kAnyPeer, c.now(), c.Tx(2));
    c.RunUntil(c.now() + 10 * kMs);
  }
  EXPECT_TRUE(c.ep(2).fenced());
  EXPECT_TRUE(c.ep(2).fenced_by() == 1u || c.ep(2).fenced_by() == 2u)
      << c.ep(2).fenced_by();                         // its probes go to node 2 too
  EXPECT_TRUE(c.ep(2).membership().declared_dead());  // it judges nobody any more
  EXPECT_EQ(c.ep(0).counters().fences_sent, 1u);
  EXPECT_EQ(reported, 1);
  c.RunUntil(c.now() + 100 * kMs);
  EXPECT_EQ(reported, 1);
  for (const Delivered& d : c.inbox(0)) EXPECT_NE(d.from, 3u);
}

// A fence from a node this one holds dead is a dead node's word: ignored,
// unless that node is the job's authority (place 0), whose view wins.
TEST(AmEndpoint, AFenceFromANodeHeldDeadCountsOnlyFromTheAuthority) {
  for (NodeId authority : {NodeId(0), NodeId(1)}) {
    EndpointConfig cfg = Quiet();
    cfg.authority = authority;
    Cluster c(2, cfg, {});
    c.ep(0).DeclareDead(2, [](NodeId, PeerState) {});
    ASSERT_TRUE(c.Send(1, 0, 5, 1, Payload(1, 8)).ok());  // node 2 speaks, not knowing
    c.ep(1).Flush(AmEndpoint::kAnyPeer, c.now(), c.Tx(1));
    c.ep(1).DeclareDead(1, [](NodeId, PeerState) {});  // and declares node 1 dead meanwhile
    c.RunUntil(c.now() + 10 * kMs);
    EXPECT_EQ(c.ep(0).counters().fences_sent, 1u) << authority;
    EXPECT_EQ(c.ep(1).fenced(), authority == 1) << authority;
    EXPECT_EQ(c.ep(1).counters().fences_ignored, authority == 1 ? 0u : 1u) << authority;
  }
}

TEST(AmEndpoint, NeverHeardPeerIsDeadASuspicionAfterTheJoinTimeout) {
  EndpointConfig cfg;
  cfg.membership.join_timeout_ns = 2000 * kMs;
  Cluster c(2, cfg, {});
  c.Kill(1);  // never says anything
  std::vector<std::pair<NodeId, PeerState>> changes;
  c.RunUntil(1900 * kMs, &changes);
  EXPECT_TRUE(changes.empty());
  c.RunUntil(2100 * kMs, &changes);  // suspected at the join timeout...
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].second, PeerState::kSuspected);
  c.RunUntil(3100 * kMs, &changes);  // ...and dead a suspicion (1 s) later
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[1].second, PeerState::kDead);
}

// 100,000 messages among three nodes (both directions of every pair) with
// 5% loss, 5% duplication and reordering: in order, exactly once.
TEST(AmEndpoint, HundredThousandMessagesThroughALossyNetwork) {
  EndpointConfig cfg = Quiet();
  NetParams net{.loss = 0.05, .duplicate = 0.05, .min_delay_ns = 20 * kUs, .max_delay_ns = 600 * kUs};
  Cluster c(3, cfg, net, 42);
  constexpr uint64_t kTotal = 100'000;
  uint64_t next[3][3] = {};
  uint64_t sent = 0;
  std::mt19937_64 rng(7);
  while (sent < kTotal) {
    bool progress = false;
    for (int from = 0; from < 3; ++from) {
      for (int to = 0; to < 3; ++to) {
        if (from == to || sent >= kTotal) continue;
        for (int k = 0; k < 16 && sent < kTotal; ++k) {
          uint64_t i = next[from][to];
          size_t len = 8 + (i * 7 + size_t(from)) % 120;
          if (!c.Send(from, to, uint32_t(100 + from), uint16_t(to), Payload(i, len)).ok()) break;
          ++next[from][to];
          ++sent;
          progress = true;
        }
      }
    }
    c.RunUntil(c.now() + (progress ? 100 * kUs : 1 * kMs));
  }
  c.RunUntil(c.now() + 2000 * kMs);
  uint64_t received = 0;
  for (int to = 0; to < 3; ++to) {
    uint64_t expect[3] = {};
    for (const Delivered& d : c.inbox(to)) {
      int from = int(d.from) - 1;
      ASSERT_EQ(d.ebb, uint32_t(100 + from));
      uint64_t i = expect[from]++;
      size_t len = 8 + (i * 7 + size_t(from)) % 120;
      ASSERT_EQ(d.data, Payload(i, len)) << "from " << from << " to " << to << " message " << i;
    }
    for (int from = 0; from < 3; ++from) EXPECT_EQ(expect[from], next[from][to]);
    received += c.inbox(to).size();
  }
  EXPECT_EQ(received, kTotal);
  uint64_t retransmitted = 0, duplicates = 0;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      if (i == j) continue;
      retransmitted += c.ep(i).ChannelTo(NodeId(j + 1))->counters().frames_retransmitted;
      duplicates += c.ep(i).ChannelTo(NodeId(j + 1))->counters().duplicates;
    }
  }
  EXPECT_GT(retransmitted, 0u);  // the network really lost frames
  EXPECT_GT(duplicates, 0u);     // and duplicated them
}

}  // namespace
}  // namespace fox::net
