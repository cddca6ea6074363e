// am_node: one program, built as a native image (am_node.elf) and as a Linux
// program on the hosted runtime (am_node_hosted), that exercises the
// active-message transport between nodes: streams checked for order and
// exactly-once delivery, echoes (hosted <-> native Messenger traffic), round
// trips, message rates, and failure detection. Used by the cluster tests
// (tests/cluster/tests.cmake) and benchmarks (tests/bench/am_*.py).
//
//   am_node STEP...     (native: -- STEP...; hosted: argv)
//
// Every node gets the same steps; each step names the node that runs it:
//   N:stream,PEER,COUNT[,SIZE]   send COUNT messages to PEER; PEER checks order
//   N:echo,PEER,COUNT[,SIZE]     COUNT echoes from PEER, contents checked
//   N:rtt,PEER,COUNT             COUNT 64-byte round trips; prints the median
//   N:rate,PEER,COUNT,SIZE       COUNT one-way messages; PEER reports the rate
//   N:dead,PEER,MS               wait (at most MS) until PEER is declared dead
//   N:notify_dead,PEER           declare PEER dead and tell every other node
//   N:quit,PEER[,PEER...]        tell peers to finish
//   N:idmap,COUNT,OTHER          COUNT job-wide Ebb ids (GlobalIdMap, served by
//                                node 0), checked disjoint from node OTHER's
//   N:put,PEER,COUNT[,SIZE]      COUNT writes of SIZE bytes straight into PEER's SAS
//                                segment "am_node.puts", addressed by plain pointers
//                                (the segment has the same address everywhere);
//                                PEER's handler writes them in delivery context
//                                and then checks the whole region
//   N:large,PEER,COUNT,SIZE      COUNT messages of SIZE bytes through the Messenger's
//                                large messages (fragments, reassembled on PEER),
//                                checked there byte for byte
//   N:status,PEER                PEER's status report (Messenger::QueryStatus), checked
//   N:status_gone,PEER           asking PEER's status must fail (kPeerDead)
//   N:many,PEER,EBBS,COUNT       COUNT messages to each of EBBS Ebbs on PEER, which
//                                listen through the per-core mailboxes (spread over
//                                PEER's cores); every 16th message of every 7th Ebb
//                                blocks its handler for 2 ms; PEER checks each Ebb's
//                                messages start in order, exactly once (every node
//                                listens for the largest EBBS of any many step)
//   N:blockers,COUNT             COUNT messages to this node's own listener whose first
//                                handler blocks until every other one has run: each
//                                must run exactly once, none held up by the blocked one
//   N:rpc_timeout,PEER           an Rpc call PEER never answers must time out (300 ms)
//   N:sleep,MS
//   N:tcp_echo,PORT,CONNS        (native) TCP echo server for CONNS connections
//   N:tcp,PORT,MIB               (native) send MIB MiB over lwIP TCP to 10.77.0.1:PORT
// A node runs its steps in order, then waits for a quit message (unless its
// last step was a quit), prints its transport counters and exits 0; any
// failed check exits 1. Transport settings come from the boot arguments
// (fox.node, fox.peers, fox.job, fox.key, fox.amport, fox.aggregate; hosted:
// FOX_ARGS).
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <memory>
#include <vector>

#include "fox/clock.h"
#include "fox/core.h"
#include "fox/ebb/global_id_map.h"
#include "fox/ebb/messenger.h"
#include "fox/ebb/rpc.h"
#include "fox/event.h"
#include "fox/net/am.h"
#include "fox/sas.h"
#include "fox/timer.h"
#include "fox/future.h"
#ifdef FOX_NATIVE
#include "fox/net/ip.h"
#endif

namespace {

using fox::EbbId;
using fox::HandlerId;
using fox::NodeId;

constexpr EbbId kEbb{0x00A70001};  // this program's receiver (a dynamic-looking id)
// All traffic goes through the Messenger Ebb (an Ebb talking to its
// counterparts on other nodes, native or hosted).
fox::ebb::EbbRef<fox::ebb::Messenger> Messenger() { return fox::ebb::Messenger::Get(); }
enum Handler : uint16_t {
  kEcho = 1,
  kEchoReply,
  kStream,
  kStreamDone,
  kStreamAck,
  kQuit,
  kRate,
  kRateDone,
  kRateResult,
  kPut,
  kPutDone,
  kPutResult,
  kLarge,
  kLargeDone,
  kLargeResult,
  kMany,
  kManyResult,
  kBlocker,
};
constexpr EbbId kManyBase{0x00A80000};  // the many step's Ebb ids: kManyBase + i
constexpr EbbId kBlockerEbb{0x00A70002};

// Every node's landing zone for puts: a SAS segment, at the same address on
// every node (native or hosted), so a sender addresses it with a pointer.
constexpr const char* kPutSegment = "am_node.puts";
constexpr size_t kPutSegmentBytes = 4 << 20;
fox::sas::Segment g_puts{};

[[noreturn]] void Fail() {
  fox::am::LogStats();  // what the transport saw, for the post-mortem
  std::fflush(stdout);
  std::exit(1);
}

#define CHECK(cond)                                                                   \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::printf("am_node: CHECK FAILED: %s at %s:%d\n", #cond, __FILE__, __LINE__); \
      Fail();                                                                         \
    }                                                                                 \
  } while (0)

constexpr int kMaxNodes = 4096;

// State written by the receiver (delivery context) and read by steps.
struct PerNode {
  std::atomic<uint64_t> stream_next{0};       // next sequence number expected
  std::atomic<uint64_t> stream_errors{0};     // out of order, duplicated or corrupted
  std::atomic<uint64_t> stream_acked{~0ull};  // the peer's ack of our stream: its count
  std::atomic<uint64_t> stream_ack_errors{0};
  std::atomic<uint64_t> echo_replies{0};
  std::atomic<uint64_t> echo_errors{0};
  std::atomic<uint64_t> rate_count{0};
  std::atomic<uint64_t> rate_first_ns{0}, rate_last_ns{0};
  std::atomic<uint64_t> rate_result_count{~0ull}, rate_result_ns{0};
  std::atomic<uint64_t> puts_received{0}, put_errors{0};
  std::atomic<uint64_t> put_result{~0ull};  // the peer's verdict on our puts: bad bytes + errors
  std::atomic<uint64_t> large_received{0}, large_errors{0};
  std::atomic<uint64_t> large_result{~0ull}, large_result_errors{0};
  std::atomic<uint64_t> many_result{~0ull}, many_result_errors{0};
};
PerNode g_nodes[kMaxNodes];
std::atomic<bool> g_quit{false};
std::atomic<uint64_t> g_reply_failures{0};

PerNode& Of(NodeId n) { return g_nodes[n % kMaxNodes]; }

uint8_t Filler(uint64_t seq, size_t k) { return uint8_t(seq * 167 + k * 13 + 1); }

void Fill(uint8_t* p, size_t len, uint64_t seq) {
  if (len >= 8) std::memcpy(p, &seq, 8);
  for (size_t k = 8; k < len; ++k) p[k] = Filler(seq, k);
}

bool Verify(const uint8_t* p, size_t len, uint64_t* seq) {
  if (len < 8) return false;
  std::memcpy(seq, p, 8);
  for (size_t k = 8; k < len; ++k) {
    if (p[k] != Filler(*seq, k)) return false;
  }
  return true;
}

// Replies are sent in delivery context (interrupt level on native nodes),
// which cannot wait for a full window: the transport parks them.
void Reply(NodeId to, HandlerId handler, const void* data, size_t len) {
  if (!Messenger()->SendOrDefer(to, kEbb, handler, data, len).ok()) g_reply_failures.fetch_add(1);
}

// The byte a put from node `from` leaves at offset `k` of the segment.
uint8_t PutByte(NodeId from, uint64_t k) { return uint8_t((k * 131 + from * 7 + (k >> 12)) ^ 0x5A); }

// Bytes of [0, count * size) of this node's put segment that differ from
// what node `from`'s puts wrote (all of the region when it is too big).
// Checked in delivery context: a test's shortcut (a real handler would post
// this much work to a core).
uint64_t CountBadPutBytes(NodeId from, uint64_t count, uint64_t size) {
  if (size == 0 || count > kPutSegmentBytes / size) return ~0ull;
  const auto* p = reinterpret_cast<const uint8_t*>(g_puts.base);
  uint64_t bad = 0;
  for (uint64_t k = 0; k < count * size; ++k) bad += p[k] != PutByte(from, k);
  return bad;
}

// Runs in delivery context: interrupt level on native nodes. No allocation,
// no blocking: counters and replies only.
class Receiver : public fox::am::Receiver {
 public:
  void OnMessage(NodeId from, HandlerId handler, const uint8_t* data, size_t len) override {
    PerNode& n = Of(from);
    uint64_t seq = 0;
    switch (Raw(handler)) {
      case kEcho: Reply(from, kEchoReply, data, len); break;
      case kEchoReply:
        if (!Verify(data, len, &seq)) n.echo_errors.fetch_add(1);
        n.echo_replies.fetch_add(1, std::memory_order_release);
        break;
      case kStream: {
        uint64_t expect = n.stream_next.load(std::memory_order_relaxed);
        if (!Verify(data, len, &seq) || seq != expect) n.stream_errors.fetch_add(1);
        n.stream_next.store(expect + 1, std::memory_order_release);
        break;
      }
      case kStreamDone: {
        uint64_t count = 0;
        if (len == 8) std::memcpy(&count, data, 8);
        uint64_t ack[2] = {n.stream_next.load(), n.stream_errors.load() + (count != n.stream_next.load())};
        Reply(from, kStreamAck, ack, sizeof ack);
        break;
      }
      case kStreamAck: {
        uint64_t ack[2] = {0, 1};
        if (len == sizeof ack) std::memcpy(ack, data, sizeof ack);
        n.stream_ack_errors.store(ack[1]);
        n.stream_acked.store(ack[0], std::memory_order_release);
        break;
      }
      case kPut: {  // u64 address, then the bytes: written where they point
        uint64_t address = 0;
        if (len >= 8) std::memcpy(&address, data, 8);
        size_t bytes = len >= 8 ? len - 8 : 0;
        if (len < 8 || address < g_puts.base || address + bytes > g_puts.base + g_puts.size ||
            address + bytes < address) {
          n.put_errors.fetch_add(1);
        } else {
          std::memcpy(reinterpret_cast<void*>(address), data + 8, bytes);
          n.puts_received.fetch_add(1, std::memory_order_release);
        }
        break;
      }
      case kPutDone: {  // u64 count, u64 size: check [base, base + count * size)
        uint64_t done[2] = {0, 0};
        if (len == sizeof done) std::memcpy(done, data, sizeof done);
        uint64_t bad = n.put_errors.load() + (n.puts_received.load() != done[0]);
        bad += CountBadPutBytes(from, done[0], done[1]);
        n.puts_received.store(0);
        n.put_errors.store(0);
        Reply(from, kPutResult, &bad, sizeof bad);
        break;
      }
      case kLargeResult: {
        uint64_t r[2] = {0, 1};
        if (len == sizeof r) std::memcpy(r, data, sizeof r);
        n.large_result_errors.store(r[1]);
        n.large_result.store(r[0], std::memory_order_release);
        break;
      }
      case kManyResult: {
        uint64_t r[2] = {0, 1};
        if (len == sizeof r) std::memcpy(r, data, sizeof r);
        n.many_result_errors.store(r[1]);
        n.many_result.store(r[0], std::memory_order_release);
        break;
      }
      case kPutResult: {
        uint64_t bad = ~0ull - 1;
        if (len == sizeof bad) std::memcpy(&bad, data, sizeof bad);
        n.put_result.store(bad, std::memory_order_release);
        break;
      }
      case kQuit: g_quit.store(true); break;
      case kRate: {
        uint64_t now = fox::clock::NowNs();
        if (n.rate_count.fetch_add(1) == 0) n.rate_first_ns.store(now);
        n.rate_last_ns.store(now);
        break;
      }
      case kRateDone: {
        uint64_t r[2] = {n.rate_count.load(), n.rate_last_ns.load() - n.rate_first_ns.load()};
        Reply(from, kRateResult, r, sizeof r);
        n.rate_count.store(0);
        break;
      }
      case kRateResult: {
        uint64_t r[2] = {0, 0};
        if (len == sizeof r) std::memcpy(r, data, sizeof r);
        n.rate_result_ns.store(r[1]);
        n.rate_result_count.store(r[0], std::memory_order_release);
        break;
      }
      default: break;
    }
  }
};
Receiver g_receiver;

// Waits (without holding the core: other events and, hosted, the receive
// path run meanwhile) until `done()` or `ms` pass; false on timeout.
template <typename F>
bool WaitUntil(F done, uint64_t ms) {
  uint64_t deadline = fox::clock::NowNs() + ms * 1'000'000;
  while (!done()) {
    if (fox::clock::NowNs() > deadline) return false;
    fox::timer::Sleep(200'000);
  }
  return true;
}

void SendOrDie(NodeId to, HandlerId handler, const void* data, size_t len) {
  auto r = Messenger()->SendWait(to, kEbb, handler, data, len);
  if (!r.ok()) {
    std::printf("am_node: send to node %u failed: %s\n", to, fox::ErrorName(r.error()));
    Fail();
  }
}

// Sends messages 0..count-1 (Fill'ed, at least 8 bytes) to `peer`'s handler.
void SendNumbered(NodeId peer, HandlerId handler, uint64_t count, size_t size) {
  size = std::max<size_t>(size, 8);
  std::vector<uint8_t> buf(size);
  for (uint64_t i = 0; i < count; ++i) {
    Fill(buf.data(), size, i);
    SendOrDie(peer, handler, buf.data(), size);
  }
}

void Stream(NodeId peer, uint64_t count, size_t size) {
  uint64_t t0 = fox::clock::NowNs();
  SendNumbered(peer, kStream, count, size);
  SendOrDie(peer, kStreamDone, &count, sizeof count);
  Messenger()->Flush(peer);
  PerNode& n = Of(peer);
  CHECK(WaitUntil([&] { return n.stream_acked.load(std::memory_order_acquire) != ~0ull; }, 600'000));
  uint64_t ms = (fox::clock::NowNs() - t0) / 1'000'000;
  std::printf("am: stream to node %u: %llu of %llu messages delivered in order, %llu errors, %llu ms\n", peer,
              (unsigned long long)n.stream_acked.load(), (unsigned long long)count,
              (unsigned long long)n.stream_ack_errors.load(), (unsigned long long)ms);
  CHECK(n.stream_acked.load() == count && n.stream_ack_errors.load() == 0);
  n.stream_acked.store(~0ull);
}

void Echo(NodeId peer, uint64_t count, size_t size) {
  size = std::max<size_t>(size, 8);
  std::vector<uint8_t> buf(size);
  PerNode& n = Of(peer);
  uint64_t base = n.echo_replies.load();
  // At most 32 echoes outstanding, so the peer's replies (parked by the
  // transport when they find the window full) stay within its deferred buffer.
  constexpr uint64_t kOutstanding = 32;
  for (uint64_t i = 0; i < count; ++i) {
    if (i >= kOutstanding) {
      Messenger()->Flush(peer);
      CHECK(WaitUntil([&] { return n.echo_replies.load() - base + kOutstanding > i; }, 60'000));
    }
    Fill(buf.data(), size, i);
    SendOrDie(peer, kEcho, buf.data(), size);
  }
  Messenger()->Flush(peer);
  CHECK(WaitUntil([&] { return n.echo_replies.load() - base >= count; }, 60'000));
  std::printf("am: %llu echoes from node %u, %llu bad\n", (unsigned long long)(n.echo_replies.load() - base), peer,
              (unsigned long long)n.echo_errors.load());
  CHECK(n.echo_errors.load() == 0 && n.echo_replies.load() - base == count);
}

void Rtt(NodeId peer, uint64_t count) {
  uint8_t buf[64];
  PerNode& n = Of(peer);
  std::vector<uint64_t> samples;
  samples.reserve(count);
  // Warm up (ARP, the peer's first replies) before measuring.
  for (uint64_t i = 0; i < count + 20; ++i) {
    uint64_t base = n.echo_replies.load(std::memory_order_acquire);
    Fill(buf, sizeof buf, i);
    uint64_t t0 = fox::clock::NowNs();
    SendOrDie(peer, kEcho, buf, sizeof buf);
    Messenger()->Flush(peer);
#ifdef FOX_NATIVE
    // The reply is handled at interrupt level on this very core: spin for
    // a while; a frame that needs the transport's timers (a retransmission,
    // the first one waiting for ARP) needs events to run: then wait.
    uint64_t spin_until = t0 + 20'000'000;
    while (n.echo_replies.load(std::memory_order_acquire) == base && fox::clock::NowNs() < spin_until) {
      __builtin_ia32_pause();
    }
    CHECK(WaitUntil([&] { return n.echo_replies.load(std::memory_order_acquire) != base; }, 5000));
#else
    CHECK(WaitUntil([&] { return n.echo_replies.load(std::memory_order_acquire) != base; }, 5000));
#endif
    if (i >= 20) samples.push_back(fox::clock::NowNs() - t0);
  }
  std::sort(samples.begin(), samples.end());
  uint64_t sum = 0;
  for (uint64_t s : samples) sum += s;
  std::printf("am_rtt: %llu round trips of 64 bytes with node %u: median %.1f us, mean %.1f us, min %.1f us\n",
              (unsigned long long)count, peer, samples[samples.size() / 2] / 1000.0, sum / 1000.0 / samples.size(),
              samples[0] / 1000.0);
  CHECK(n.echo_errors.load() == 0);
}

// COUNT puts of SIZE bytes into PEER's segment, back to back from its start,
// each addressed by the pointer it has on PEER (its address here too).
void Put(NodeId peer, uint64_t count, size_t size) {
  size = std::clamp<size_t>(size, 1, fox::net::kMaxMessageBytes - 8);
  CHECK(count * size <= kPutSegmentBytes);
  PerNode& n = Of(peer);
  std::vector<uint8_t> msg(8 + size);
  NodeId me = fox::am::Self();
  uint64_t t0 = fox::clock::NowNs();
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t address = g_puts.base + i * size;
    std::memcpy(msg.data(), &address, 8);
    for (size_t k = 0; k < size; ++k) msg[8 + k] = PutByte(me, i * size + k);
    SendOrDie(peer, kPut, msg.data(), msg.size());
  }
  uint64_t done[2] = {count, size};
  SendOrDie(peer, kPutDone, done, sizeof done);
  Messenger()->Flush(peer);
  CHECK(WaitUntil([&] { return n.put_result.load(std::memory_order_acquire) != ~0ull; }, 600'000));
  uint64_t bad = n.put_result.exchange(~0ull);
  std::printf("am: %llu puts of %zu bytes into node %u's SAS segment at %#lx: %llu bad bytes, %llu ms\n",
              (unsigned long long)count, size, peer, (unsigned long)g_puts.base, (unsigned long long)bad,
              (unsigned long long)((fox::clock::NowNs() - t0) / 1'000'000));
  CHECK(bad == 0);
}

// Large messages arrive whole, as events on the core chosen by ListenLarge
// (the last one: not the Messenger's).
int LargeCore() { return fox::core::Online() - 1; }

void OnLarge(NodeId from, HandlerId handler, std::vector<uint8_t> data) {
  PerNode& n = Of(from);
  if (fox::core::Current() != LargeCore()) n.large_errors.fetch_add(1);
  uint64_t seq = 0;
  if (handler == kLarge) {
    if (!Verify(data.data(), data.size(), &seq) || seq != n.large_received.load()) n.large_errors.fetch_add(1);
    n.large_received.fetch_add(1);
  } else if (handler == kLargeDone) {
    uint64_t count = 0;
    if (data.size() == 8) std::memcpy(&count, data.data(), 8);
    uint64_t r[2] = {n.large_received.exchange(0), n.large_errors.exchange(0)};
    if (r[0] != count) ++r[1];
    Reply(from, kLargeResult, r, sizeof r);
    Messenger()->Flush(from);
  }
}

void Large(NodeId peer, uint64_t count, size_t size) {
  size = std::max<size_t>(size, 8);
  PerNode& n = Of(peer);
  std::vector<uint8_t> buf(size);
  uint64_t t0 = fox::clock::NowNs();
  for (uint64_t i = 0; i < count; ++i) {
    Fill(buf.data(), size, i);
    auto r = Messenger()->SendLarge(peer, kEbb, kLarge, buf.data(), size);
    if (!r.ok()) {
      std::printf("am_node: large message to node %u failed: %s\n", peer, fox::ErrorName(r.error()));
      Fail();
    }
  }
  CHECK(Messenger()->SendLarge(peer, kEbb, kLargeDone, &count, sizeof count).ok());
  CHECK(WaitUntil([&] { return n.large_result.load(std::memory_order_acquire) != ~0ull; }, 600'000));
  uint64_t got = n.large_result.exchange(~0ull), bad = n.large_result_errors.load();
  double s = double(fox::clock::NowNs() - t0) / 1e9;
  std::printf("am: %llu large messages of %zu bytes to node %u: %llu received whole, %llu bad, %.0f ms, %.1f MB/s\n",
              (unsigned long long)count, size, peer, (unsigned long long)got, (unsigned long long)bad, s * 1000,
              double(count) * double(size) / s / 1e6);
  CHECK(got == count && bad == 0);
}

// ---- many Ebbs, per-core mailboxes, blocking handlers ----

// Per sending node and Ebb of the many step: the next message expected.
struct ManyState {
  std::vector<std::atomic<uint64_t>> next;
  std::atomic<uint64_t> complete{0}, errors{0};
  explicit ManyState(size_t ebbs) : next(ebbs) {}
};
std::vector<std::unique_ptr<ManyState>> g_many;  // indexed by node % kMaxNodes, made before listening
size_t g_many_ebbs = 0;

void SleepMs(uint64_t ms) { fox::timer::Sleep(ms * 1'000'000); }

// An event on one of this node's cores: message `seq` of `count` for Ebb i.
void OnMany(NodeId from, size_t i, const uint8_t* data, size_t len) {
  ManyState& m = *g_many[from % kMaxNodes];
  uint64_t v[2] = {~0ull, 0};  // seq, count
  if (len == sizeof v) std::memcpy(v, data, sizeof v);
  uint64_t expect = m.next[i].load();
  if (v[0] != expect) m.errors.fetch_add(1);
  m.next[i].store(expect + 1);
  if (i % 7 == 0 && v[0] % 16 == 0) SleepMs(2);  // the messages behind it go on meanwhile
  if (v[0] + 1 != v[1]) return;
  if (m.complete.fetch_add(1) + 1 != g_many_ebbs) return;
  uint64_t r[2] = {m.complete.load(), m.errors.load()};
  m.complete.store(0);
  m.errors.store(0);
  for (auto& n : m.next) n.store(0);
  SendOrDie(from, kManyResult, r, sizeof r);  // an event: it may wait for the window
  Messenger()->Flush(from);
}

void ListenMany(size_t ebbs) {
  g_many_ebbs = ebbs;
  g_many.resize(kMaxNodes);
  for (auto& m : g_many) m = std::make_unique<ManyState>(ebbs);
  for (size_t i = 0; i < ebbs; ++i) {
    int core = int(i % size_t(fox::core::Online()));
    auto r = Messenger()->Listen(
        kManyBase + uint32_t(i),
        [i](NodeId from, HandlerId handler, const uint8_t* data, size_t len) {
          if (handler == kMany) OnMany(from, i, data, len);
        },
        core);
    CHECK(r.ok());
  }
}

void Many(NodeId peer, size_t ebbs, uint64_t count) {
  CHECK(ebbs <= g_many_ebbs);
  PerNode& n = Of(peer);
  uint64_t t0 = fox::clock::NowNs();
  for (uint64_t seq = 0; seq < count; ++seq) {
    for (size_t i = 0; i < ebbs; ++i) {
      uint64_t v[2] = {seq, count};
      auto r = Messenger()->SendWait(peer, kManyBase + uint32_t(i), kMany, v, sizeof v);
      CHECK(r.ok());
    }
  }
  Messenger()->Flush(peer);
  CHECK(WaitUntil([&] { return n.many_result.load(std::memory_order_acquire) != ~0ull; }, 600'000));
  uint64_t complete = n.many_result.exchange(~0ull), errors = n.many_result_errors.load();
  std::printf("am: %llu messages to each of %zu Ebbs on node %u: %llu Ebbs complete, %llu errors, %llu ms\n",
              (unsigned long long)count, ebbs, peer, (unsigned long long)complete, (unsigned long long)errors,
              (unsigned long long)((fox::clock::NowNs() - t0) / 1'000'000));
  CHECK(complete == ebbs && errors == 0);
}

// A handler that blocks while more messages for the same mailbox arrive.
void Blockers(uint64_t count) {
  CHECK(count >= 2);
  std::vector<std::atomic<uint32_t>> runs(count);
  std::atomic<uint64_t> distinct{0}, returned{0};
  fox::Promise<void> release;
  auto released = std::make_shared<fox::Future<void>>(release.GetFuture());
  auto r = Messenger()->Listen(kBlockerEbb, [&](NodeId, HandlerId, const uint8_t* data, size_t len) {
    uint64_t seq = ~0ull;
    if (len == 8) std::memcpy(&seq, data, 8);
    if (seq >= count) return;
    if (runs[seq].fetch_add(1) == 0) distinct.fetch_add(1);
    if (seq == 0) released->Block();  // blocks this event; the mailbox goes on
    returned.fetch_add(1);
  });
  CHECK(r.ok());
  NodeId me = fox::am::Self();
  for (uint64_t seq = 0; seq < count; ++seq) {
    CHECK(Messenger()->SendWait(me, kBlockerEbb, kBlocker, &seq, sizeof seq).ok());
  }
  bool others_ran = WaitUntil([&] { return distinct.load() == count && returned.load() == count - 1; }, 60'000);
  release.SetValue();
  CHECK(WaitUntil([&] { return returned.load() == count; }, 60'000));
  WaitUntil([] { return false; }, 50);  // a duplicate would show up meanwhile
  uint64_t twice = 0;
  for (auto& n : runs) twice += n.load() != 1;
  std::printf(
      "am: %llu local messages, the first handler blocked: others ran meanwhile: %s, %llu not run exactly once\n",
      (unsigned long long)count, others_ran ? "yes" : "no", (unsigned long long)twice);
  Messenger()->StopListening(kBlockerEbb);
  CHECK(others_ran && twice == 0);
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t p = s.find(sep, start);
    out.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) return out;
    start = p + 1;
  }
}

void Status(NodeId peer, bool expect_gone) {
  auto r = Messenger()->QueryStatus(peer, 20'000).Block();
  if (expect_gone) {
    std::printf("am: status of node %u: %s\n", peer, r.ok() ? "answered" : fox::ErrorName(r.error()));
    CHECK(!r.ok() && r.error() == fox::Error::kPeerDead);
    return;
  }
  if (!r.ok()) {
    std::printf("am: status of node %u: %s\n", peer, fox::ErrorName(r.error()));
    Fail();
  }
  size_t lines = std::count(r->begin(), r->end(), '\n');
  std::printf("am: status of node %u: %zu lines\n", peer, lines);
  for (const std::string& line : Split(*r, '\n')) {
    if (!line.empty()) std::printf("status| %s\n", line.c_str());
  }
  CHECK(r->find("node " + std::to_string(peer) + "\n") == 0);
  CHECK(r->find("\nam.messages_delivered ") != std::string::npos);
}

// A request PEER's receiver ignores (an unknown handler): the call times out.
void RpcTimeout(NodeId peer) {
  constexpr HandlerId kUnanswered{999};
  uint64_t t0 = fox::clock::NowNs();
  auto r = fox::ebb::Rpc::Get()->Call(peer, kEbb, kUnanswered, "?", 1, 300).Block();
  uint64_t ms = (fox::clock::NowNs() - t0) / 1'000'000;
  std::printf("am: rpc to node %u left unanswered: %s after %llu ms\n", peer,
              r.ok() ? "answered" : fox::ErrorName(r.error()), (unsigned long long)ms);
  CHECK(!r.ok() && r.error() == fox::Error::kTimedOut && ms >= 300 && ms < 2000);
  CHECK(fox::ebb::Rpc::Get()->pending() == 0);
}

void Rate(NodeId peer, uint64_t count, size_t size) {
  size = std::max<size_t>(size, 8);
  PerNode& n = Of(peer);
  uint64_t t0 = fox::clock::NowNs();
  SendNumbered(peer, kRate, count, size);
  SendOrDie(peer, kRateDone, &count, sizeof count);
  Messenger()->Flush(peer);
  CHECK(WaitUntil([&] { return n.rate_result_count.load(std::memory_order_acquire) != ~0ull; }, 600'000));
  uint64_t got = n.rate_result_count.load(), ns = n.rate_result_ns.load();
  uint64_t sender_ns = fox::clock::NowNs() - t0;
  std::printf(
      "am_rate: %llu messages of %zu bytes to node %u: received %llu; %.0f messages/s at the receiver, "
      "%.0f messages/s end to end\n",
      (unsigned long long)count, size, peer, (unsigned long long)got, ns ? got * 1e9 / ns : 0.0, got * 1e9 / sender_ns);
  CHECK(got == count);
  n.rate_result_count.store(~0ull);
}

void WaitDead(NodeId peer, uint64_t ms) {
  std::printf("am: waiting for node %u to be declared dead\n", peer);
  std::fflush(stdout);
  uint64_t t0 = fox::clock::NowNs();
  bool dead = WaitUntil([&] { return fox::am::State(peer) == fox::am::PeerState::kDead; }, ms);
  uint64_t waited = (fox::clock::NowNs() - t0) / 1'000'000;
  if (!dead) {
    std::printf("am_node: node %u still %s after %llu ms\n", peer, fox::net::PeerStateName(fox::am::State(peer)),
                (unsigned long long)waited);
    std::exit(1);
  }
  std::printf("am: node %u declared dead after %llu ms of waiting\n", peer, (unsigned long long)waited);
  WaitUntil([] { return false; }, 100);  // the subscribers' events run meanwhile
  CHECK(Messenger()->Send(peer, kEbb, kEcho, "x", 1).error() == fox::Error::kPeerDead);
}

#ifdef FOX_NATIVE
// Sends `mb` MiB over lwIP TCP to the host side (10.77.0.1:port), waiting
// for each chunk to be in lwIP's buffer before the next (backpressure).
void TcpSend(uint16_t port, uint64_t mb) {
  auto host = fox::net::Ipv4::Parse("10.77.0.1");
  CHECK(host.ok());
  auto sock = fox::net::TcpSocket::Connect({*host, port}).Block();
  if (sock.status() != fox::net::Status::kOk) {
    std::printf("am_node: tcp connect: %s\n", fox::net::StatusName(sock.status()));
    std::exit(1);
  }
  std::vector<uint8_t> chunk(64 * 1024);
  for (size_t k = 0; k < chunk.size(); ++k) chunk[k] = uint8_t(k * 7);
  uint64_t t0 = fox::clock::NowNs();
  uint64_t total = mb << 20;
  for (uint64_t sent = 0; sent < total; sent += chunk.size()) {
    auto st = sock.Send(chunk.data(), chunk.size()).Block();
    CHECK(st == fox::net::Status::kOk);
  }
  uint64_t ns = fox::clock::NowNs() - t0;
  std::printf("tcp: sent %llu MiB in %llu ms: %.1f MiB/s\n", (unsigned long long)mb, (unsigned long long)(ns / 1000000),
              double(total) / (1 << 20) / (ns / 1e9));
  sock.Close();
}

// Echoes TCP on `port` for `connections` connections (each until the client
// closes), for a Linux client in the cluster's namespace.
void TcpEcho(uint16_t port, uint64_t connections) {
  auto closed = std::make_shared<std::atomic<uint64_t>>(0);
  auto bytes = std::make_shared<std::atomic<uint64_t>>(0);
  auto listener = fox::net::TcpListener::Listen(port, [closed, bytes](fox::net::TcpSocket sock) {
                    auto s = std::make_shared<fox::net::TcpSocket>(std::move(sock));
                    s->OnReceive([s, bytes](fox::net::Packet data) {
                      std::string text = data.ToString();
                      bytes->fetch_add(text.size());
                      (void)s->Send(text.data(), text.size());
                    });
                    s->OnClose([s, closed](fox::net::Status) {
                      s->Close();
                      closed->fetch_add(1);
                    });
                  }).Block();
  CHECK(listener.status() == fox::net::Status::kOk);
  std::printf("tcp_echo: listening on port %u\n", port);
  std::fflush(stdout);
  CHECK(WaitUntil([&] { return closed->load() >= connections; }, 300'000));
  listener.Close();
  std::printf("tcp_echo: %llu connections, %llu bytes echoed\n", (unsigned long long)closed->load(),
              (unsigned long long)bytes->load());
}
#endif

// Job-wide Ebb ids through the GlobalIdMap (served by node 0): takes `count`
// ids with AllocateId() from job-wide ranges, publishes its ranges in the
// map under key kRangesKey + node, waits for node `other`'s list and checks
// that no id was handed to both.
constexpr fox::ebb::EbbId kRangesKey{0x40000000};

std::string RangesOf(const std::vector<fox::ebb::EbbId>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i + 1;
    while (j < ids.size() && ids[j] == ids[j - 1] + 1) ++j;
    out += std::to_string(Raw(ids[i])) + ":" + std::to_string(j - i) + ",";
    i = j;
  }
  return out;
}

void IdMap(uint64_t count, NodeId other) {
  auto map = fox::ebb::GlobalIdMap::Get();
  fox::ebb::SetIdRangeSource(map->RangeSource());
  std::vector<fox::ebb::EbbId> ids;
  for (uint64_t i = 0; i < count; ++i) {
    fox::ebb::EbbId id = fox::ebb::AllocateId();
    CHECK(id >= fox::ebb::kFirstGlobalDynamicId);
    CHECK(ids.empty() || id > ids.back());  // one node's ids only grow
    ids.push_back(id);
  }
  std::string mine = RangesOf(ids);
  NodeId me = fox::am::Self();
  CHECK(map->Set(kRangesKey + me, mine).Block().ok());
  std::string theirs;
  bool found = WaitUntil(
      [&] {
        auto r = map->Lookup(kRangesKey + other).Block();
        if (r.ok()) theirs = *r;
        return r.ok();
      },
      60'000);
  CHECK(found);
  size_t ranges = 0;
  for (size_t pos = 0; pos < theirs.size();) {
    size_t colon = theirs.find(':', pos), comma = theirs.find(',', pos);
    CHECK(colon != std::string::npos && comma != std::string::npos && colon < comma);
    uint64_t first = std::strtoull(theirs.c_str() + pos, nullptr, 10);
    uint64_t n = std::strtoull(theirs.c_str() + colon + 1, nullptr, 10);
    for (auto id : ids) CHECK(Raw(id) < first || Raw(id) >= first + n);
    ++ranges;
    pos = comma + 1;
  }
  std::printf("idmap: node %u: %zu job-wide ids in %zu ranges, none in node %u's %zu ranges\n", me, ids.size(),
              std::count(mine.begin(), mine.end(), ','), other, ranges);
}

uint64_t Num(const std::vector<std::string>& v, size_t i, uint64_t fallback) {
  if (i >= v.size()) return fallback;
  char* end = nullptr;
  uint64_t n = std::strtoull(v[i].c_str(), &end, 10);
  if (v[i].empty() || *end != '\0') {
    std::printf("am_node: bad number '%s'\n", v[i].c_str());
    std::exit(2);
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  auto config = fox::am::ConfigFromBootArgs();
  if (!config.ok()) return 2;
#ifdef FOX_NATIVE
  fox::net::InterfaceInfo info;
  if (int status = fox::net::StartFromBootArgs("am_node", &info); status != 0) return status;
  std::printf("am_node: node %u at %s\n", config->self, info.address.ToString().c_str());
#endif
  auto puts = fox::sas::Create(kPutSegment, kPutSegmentBytes, fox::sas::Access::kReadWrite);
  if (!puts.ok()) {
    std::printf("am_node: no SAS segment for puts: %s\n", fox::ErrorName(puts.error()));
    return 1;
  }
  g_puts = *puts;
  CHECK(Messenger()->ListenInDelivery(kEbb, &g_receiver).ok());
  size_t many_ebbs = 0;  // every node listens for the largest many step
  for (int i = 1; i < argc; ++i) {
    auto v = Split(argv[i], ',');
    if (v.size() >= 3 && v[0].find(":many") != std::string::npos) many_ebbs = std::max<size_t>(many_ebbs, Num(v, 2, 0));
  }
  if (many_ebbs != 0) ListenMany(many_ebbs);
  CHECK(Messenger()->ListenLarge(kEbb, OnLarge, LargeCore()).ok());
  auto started = fox::am::Start(*config);
  if (!started.ok()) {
    std::printf("am_node: cannot start the transport: %s\n", fox::ErrorName(started.error()));
    return 1;
  }
  // Every node runs the GlobalIdMap Ebb (node 0 serves it) and the Messenger.
  CHECK(fox::ebb::GlobalIdMap::Get()->server() == 0);
  CHECK(Messenger()->Self() == config->self);
  fox::am::OnPeerState(
      [](NodeId n, fox::am::PeerState s) { std::printf("am_node: node %u is %s\n", n, fox::net::PeerStateName(s)); });
  // A subscriber that stopped hears nothing (tests reject this line).
  uint64_t stopped = fox::am::OnPeerState(
      [](NodeId n, fox::am::PeerState) { std::printf("am_node: a stopped subscriber heard of node %u\n", n); });
  fox::am::StopPeerState(stopped);
  NodeId me = config->self;
  std::printf("am_node: ready\n");
  std::fflush(stdout);
  bool quit_sent = false;
  for (int i = 1; i < argc; ++i) {
    std::string step = argv[i];
    size_t colon = step.find(':');
    if (colon == std::string::npos) {
      std::printf("am_node: bad step '%s' (expected NODE:ACTION,...)\n", argv[i]);
      return 2;
    }
    auto who = Split(step.substr(0, colon), ',');
    if (Num(who, 0, 0) != me) continue;
    auto v = Split(step.substr(colon + 1), ',');
    const std::string& what = v[0];
    NodeId peer = NodeId(Num(v, 1, 0));
    quit_sent = false;
    if (what == "stream") {
      Stream(peer, Num(v, 2, 1000), Num(v, 3, 24));
    } else if (what == "echo") {
      Echo(peer, Num(v, 2, 100), Num(v, 3, 64));
    } else if (what == "rtt") {
      Rtt(peer, Num(v, 2, 1000));
    } else if (what == "rate") {
      Rate(peer, Num(v, 2, 10000), Num(v, 3, 32));
    } else if (what == "dead") {
      WaitDead(peer, Num(v, 2, 10000));
    } else if (what == "quit") {
      for (size_t k = 1; k < v.size(); ++k) SendOrDie(NodeId(Num(v, k, 0)), kQuit, "q", 1);
      for (size_t k = 1; k < v.size(); ++k) Messenger()->Flush(NodeId(Num(v, k, 0)));
      // Let the quit messages be acknowledged before this node goes away.
      WaitUntil([] { return false; }, 300);
      quit_sent = true;
#ifdef FOX_NATIVE
    } else if (what == "tcp_echo") {
      TcpEcho(uint16_t(Num(v, 1, 7)), Num(v, 2, 1));
      quit_sent = true;
    } else if (what == "tcp") {
      TcpSend(uint16_t(Num(v, 1, 5001)), Num(v, 2, 16));
      quit_sent = true;  // nothing to wait for
#endif
    } else if (what == "idmap") {
      IdMap(Num(v, 1, 600), NodeId(Num(v, 2, 0)));
    } else if (what == "notify_dead") {
      fox::am::NotifyDead(peer);
      std::printf("am: told the job node %u is dead\n", peer);
    } else if (what == "status" || what == "status_gone") {
      Status(peer, what == "status_gone");
    } else if (what == "large") {
      Large(peer, Num(v, 2, 10), Num(v, 3, 100000));
    } else if (what == "put") {
      Put(peer, Num(v, 2, 1000), Num(v, 3, 1000));
    } else if (what == "rpc_timeout") {
      RpcTimeout(peer);
    } else if (what == "many") {
      Many(peer, Num(v, 2, 500), Num(v, 3, 20));
    } else if (what == "blockers") {
      Blockers(Num(v, 1, 1000));
    } else if (what == "sleep") {
      WaitUntil([] { return false; }, Num(v, 1, 100));
    } else {
      std::printf("am_node: unknown action '%s'\n", what.c_str());
      return 2;
    }
  }
  if (!quit_sent) {
    CHECK(WaitUntil([] { return g_quit.load(); }, 600'000));
  }
  fox::am::LogStats();
  auto large = Messenger()->large_stats();
  std::printf(
      "am: large messages: %llu sent (%llu direct), %llu received (%llu direct), %llu dropped, %llu probes "
      "refused\n",
      (unsigned long long)large.sent, (unsigned long long)large.direct_sent, (unsigned long long)large.received,
      (unsigned long long)large.direct_received, (unsigned long long)large.dropped,
      (unsigned long long)large.probes_refused);
  uint64_t errors = g_reply_failures.load();
  for (int i = 0; i < kMaxNodes; ++i) {
    PerNode& n = g_nodes[i];
    errors += n.stream_errors.load();
    if (n.stream_next.load() != 0) {
      std::printf("am: stream from node %d: %llu messages in order, %llu errors\n", i,
                  (unsigned long long)n.stream_next.load(), (unsigned long long)n.stream_errors.load());
    }
  }
  std::printf("am_node: node %u done, %llu errors (%llu messages deferred)\n", me, (unsigned long long)errors,
              (unsigned long long)fox::am::GetStats().endpoint.deferred);
  return errors == 0 ? 0 : 1;
}
