// The AM driver, shared by both platforms (am.h): one Endpoint behind one
// lock, receivers, mailboxes, the timer and the waiting senders.
//
// Locking. Everything the endpoint holds is guarded by g.lock, an
// IrqSpinLock: senders on any core, the receive path (native: the NIC's
// interrupt on core 0; hosted: an event on the transport core) and the pump
// take it with interrupts off. Receivers run with it held and may Send
// (replies): the lock records its holder per core (t_holding) so the nested
// Send does not take it again. Nothing else is called with it held except
// PlatformTransmit and, in the pump only (event context), allocation for
// the list of state changes.
//
// Timers. One "pump" runs as an event on the transport core: it calls
// Endpoint::Poll (flush timers, retransmissions, heartbeats, failure
// detector), resumes senders waiting for room, reports peer state changes,
// and arms one timer for the next deadline. Whoever may have made a
// deadline earlier than the armed one (a first message in an aggregation
// buffer, a transmission that starts a retransmission timer) fires the
// pump's InterruptTrigger, which is allocation-free and interrupt-safe.
#include "fox/net/am.h"

#include <atomic>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "am_platform.h"
#include "fox/boot_args.h"
#include "fox/clock.h"
#include "fox/cmdline.h"
#include "fox/core.h"
#include "fox/event.h"
#include "fox/irq_spinlock.h"
#include "fox/log.h"
#include "fox/net/wire.h"
#include "fox/timer.h"

namespace fox::am {
namespace {

constexpr size_t kReceiverSlots = 2048;  // open addressing; at most 1024 used
constexpr int kMaxMailboxes = 64;
// Ring bytes one frame's messages can take in a mailbox: every record is at
// most 16 bytes of header plus its data rounded to 8, and a frame holds at
// most kMaxPayloadBytes of records of at least 8 bytes each.
constexpr size_t kFrameReserve = 2 * net::kMaxPayloadBytes + 1536;  // + a skip at the ring's end

struct ReceiverSlot {
  uint32_t ebb = 0;  // 0: free
  Receiver* receiver = nullptr;
};

struct Waiter {
  NodeId node;
  size_t length;  // of the message it waits to send
  event::Continuation continuation;
};

struct StateCallback {
  int core;
  std::shared_ptr<Function<void(NodeId, PeerState)>> fn;
};

struct Driver {
  IrqSpinLock lock;
  Config config;
  net::AmEndpoint* endpoint = nullptr;
  ReceiverSlot receivers[kReceiverSlots];
  size_t receiver_count = 0;
  Mailbox* mailboxes[kMaxMailboxes] = {};
  int mailbox_count = 0;
  std::vector<Waiter> waiters;
  std::vector<StateCallback> state_callbacks;
  event::InterruptTrigger* pump = nullptr;
  std::atomic<uint64_t> armed_deadline{net::kNoDeadline};
  timer::TimerId timer = 0;
  bool timer_armed = false;
  std::atomic<bool> started{false};
  std::atomic<bool> have_waiters{false};
  // Counters written with the lock held.
  uint64_t local_messages = 0, no_receiver = 0, backpressure_drops = 0;
  uint64_t refusing_since = 0;  // first refusal of a frame for lack of a receiver (0: none pending)
  uint64_t last_warned[net::kNumDropReasons] = {};  // WarnAboutDrop's rate limit
  uint64_t tx_datagrams = 0, tx_bytes = 0, tx_failures = 0, rx_datagrams = 0, rx_bytes = 0;
};

Driver g;
thread_local bool t_holding = false;  // this core holds g.lock (natively: per core, FS-relative)

// Takes g.lock unless this core holds it already (a Receiver sending).
class Locked {
 public:
  Locked() NO_THREAD_SAFETY_ANALYSIS {
    if (t_holding) return;
    enabled_ = g.lock.Lock();
    t_holding = true;
    owner_ = true;
  }
  ~Locked() NO_THREAD_SAFETY_ANALYSIS {
    if (!owner_) return;
    t_holding = false;
    g.lock.Unlock(enabled_);
  }
  Locked(const Locked&) = delete;
  Locked& operator=(const Locked&) = delete;

 private:
  bool owner_ = false;
  bool enabled_ = false;
};

size_t ReceiverSlotOf(uint32_t ebb) { return (uint64_t(ebb) * 0x9E3779B97F4A7C15ull >> 40) % kReceiverSlots; }

Receiver* FindReceiver(uint32_t ebb) {
  for (size_t i = ReceiverSlotOf(ebb), n = 0; n < kReceiverSlots; i = (i + 1) % kReceiverSlots, ++n) {
    if (g.receivers[i].ebb == 0) return nullptr;
    if (g.receivers[i].ebb == ebb) return g.receivers[i].receiver;
  }
  return nullptr;
}

bool Transmit(uint64_t address, const uint8_t* frame, size_t length) {
  if (!internal::PlatformTransmit(address, frame, length)) {
    ++g.tx_failures;
    return false;
  }
  ++g.tx_datagrams;
  g.tx_bytes += length;
  return true;
}

// Transmit as an object, for FunctionRef parameters.
constexpr auto kTransmit = [](uint64_t address, const uint8_t* frame, size_t length) {
  return Transmit(address, frame, length);
};

void Dispatch(NodeId from, uint32_t ebb, uint16_t handler, const uint8_t* data, size_t length) {
  Receiver* r = FindReceiver(ebb);
  if (r == nullptr) {
    ++g.no_receiver;
    return;
  }
  r->OnMessage(from, handler, data, length);
}

// A frame with a message for an Ebb id that has no receiver yet is refused
// (unacknowledged: the sender retransmits it), for up to kReceiverGraceNs
// since such refusals began: nodes of a job start their Ebbs at slightly
// different times (a GlobalIdMap request may reach node 0 before node 0
// has created its map). Past the grace such messages are delivered to
// nobody and counted (no_receiver), so a bogus id cannot stall a channel
// for long. Lock held.
constexpr uint64_t kReceiverGraceNs = 10'000'000'000;

bool Admit(const net::FrameView& frame, uint64_t now) {
  bool delivers = false;  // to a receiver (acks and heartbeats alone do not end a grace)
  uint32_t known = net::kSystemEbb;  // the last id found: aggregated frames repeat their Ebb
  for (net::AmMessage m : frame) {
    if (m.ebb == net::kSystemEbb || m.ebb == known) continue;
    if (FindReceiver(m.ebb) != nullptr) {
      delivers = true;
      known = m.ebb;
      continue;
    }
    if (g.refusing_since == 0) g.refusing_since = now;
    return now - g.refusing_since >= kReceiverGraceNs;
  }
  if (delivers) g.refusing_since = 0;
  return true;
}

bool MailboxesHaveRoom(size_t bytes) {
  for (int i = 0; i < g.mailbox_count; ++i) {
    if (g.mailboxes[i]->Room() < bytes) return false;
  }
  return true;
}

// Fires the pump if the armed timer may be too late for what just happened.
void KickPump(uint64_t now) {
  const auto& t = g.config.tuning;
  uint64_t soonest = t.flush_delay_ns < t.channel.min_rto_ns ? t.flush_delay_ns : t.channel.min_rto_ns;
  if (g.armed_deadline.load(std::memory_order_relaxed) > now + soonest && g.pump != nullptr) {
    g.pump->Fire();
  }
}

void Pump();

// Tells the OnPeerState callbacks (each as an event on its core).
void Notify(NodeId node, PeerState state) {
  for (auto& cb : g.state_callbacks) {
    auto fn = cb.fn;
    event::SpawnRemote(cb.core, [fn, node, state] { (*fn)(node, state); });
  }
}

void ArmTimer(uint64_t next, uint64_t now) {
  uint64_t armed = g.armed_deadline.load(std::memory_order_relaxed);
  if (g.timer_armed && next >= armed) return;  // the armed one comes first; it re-polls
  if (g.timer_armed) timer::Cancel(g.timer);
  g.timer_armed = false;
  g.armed_deadline.store(next, std::memory_order_relaxed);
  if (next == net::kNoDeadline) return;
  g.timer = timer::Start(next > now ? next - now : 0, [] {
    g.timer_armed = false;
    g.armed_deadline.store(net::kNoDeadline, std::memory_order_relaxed);
    Pump();
  });
  g.timer_armed = true;
}

// The pump: an event on the transport core.
void Pump() {
  g.pump->Arm();
  uint64_t now = clock::NowNs();
  std::vector<std::pair<NodeId, PeerState>> changes;
  std::vector<Waiter> ready;
  uint64_t next;
  {
    Locked l;
    next = g.endpoint->Poll(now, kTransmit, [&](NodeId n, PeerState s) { changes.emplace_back(n, s); });
    for (size_t i = 0; i < g.waiters.size();) {
      NodeId n = g.waiters[i].node;
      PeerState st = g.endpoint->State(n);
      bool gone = st == PeerState::kDead || st == PeerState::kUnknown;  // Send fails: let it say so
      if (gone || g.endpoint->CanSend(n, g.waiters[i].length)) {
        ready.push_back(std::move(g.waiters[i]));
        g.waiters[i] = std::move(g.waiters.back());
        g.waiters.pop_back();
      } else {
        ++i;
      }
    }
    g.have_waiters.store(!g.waiters.empty(), std::memory_order_relaxed);
  }
  for (auto& w : ready) w.continuation.Resume();
  for (auto& change : changes) {
    NodeId node = change.first;
    PeerState state = change.second;
    if (state == PeerState::kDead) {
      LOG_WARN("am: node %u declared dead", node);
    } else {
      LOG_INFO("am: node %u %s (phi %d/10)", node, net::PeerStateName(state), int(Phi(node) * 10));
    }
    Notify(node, state);
  }
  ArmTimer(next, now);
}

uint64_t ParseHexKeyPart(std::string_view s, bool* ok) {
  uint64_t v = 0;
  for (char c : s) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) *ok = false;
    v = v << 4 | uint64_t(d < 0 ? 0 : d);
  }
  return v;
}

bool ParseIpv4(std::string_view s, uint32_t* out) {
  uint32_t v = 0;
  int parts = 0;
  size_t i = 0;
  while (parts < 4) {
    if (i >= s.size() || s[i] < '0' || s[i] > '9') return false;
    uint32_t part = 0;
    size_t digits = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      part = part * 10 + uint32_t(s[i] - '0');
      if (++digits > 3 || part > 255) return false;
      ++i;
    }
    v = v << 8 | part;
    if (++parts < 4) {
      if (i >= s.size() || s[i] != '.') return false;
      ++i;
    }
  }
  if (i != s.size()) return false;
  *out = v;
  return true;
}

// A decimal number in [0, max], with the command line's parser.
bool ParseDecimal(std::string_view s, uint64_t max, uint64_t* out) {
  auto n = ParseUInt(s);
  if (!n.ok() || *n > max) return false;
  *out = *n;
  return true;
}

}  // namespace

// ---- configuration ----

Result<void> ParsePeers(std::string_view text, uint16_t default_port,
                        FunctionRef<void(NodeId, uint32_t, uint16_t)> add, const char** error) {
  struct Entry {
    NodeId node;
    uint32_t ip;
    uint16_t port;
  };
  std::vector<Entry> entries;
  auto fail = [&](const char* why) -> Result<void> {
    if (error != nullptr) *error = why;
    return Error::kInvalidArgument;
  };
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string_view item = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    size_t at = item.find('@');
    if (at == std::string_view::npos) return fail("expected ID@A.B.C.D[:PORT]");
    uint64_t node = 0, port = default_port;
    if (!ParseDecimal(item.substr(0, at), 0x7FFFFFFF, &node)) return fail("bad node id");
    std::string_view where = item.substr(at + 1);
    size_t colon = where.find(':');
    if (colon != std::string_view::npos) {
      if (!ParseDecimal(where.substr(colon + 1), 65535, &port) || port == 0) return fail("bad port");
      where = where.substr(0, colon);
    }
    uint32_t ip = 0;
    if (!ParseIpv4(where, &ip)) return fail("bad IPv4 address");
    entries.push_back({NodeId(node), ip, uint16_t(port)});
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  for (auto& e : entries) add(e.node, e.ip, e.port);
  return {};
}

Result<Config> ConfigFromBootArgs() {
  Config c;
  c.self = NodeId(BootArgNumber("fox.node", 0));
  c.job = BootArgNumber("fox.job", 1);
  c.port = uint16_t(BootArgNumber("fox.amport", kDefaultPort));
  if (const char* a = BootArg("fox.aggregate")) c.tuning.aggregate = std::string_view(a) != "off";
  if (const char* k = BootArg("fox.key")) {
    std::string_view key(k);
    bool ok = key.size() == 32;
    uint64_t k0 = ok ? ParseHexKeyPart(key.substr(0, 16), &ok) : 0;
    uint64_t k1 = ok ? ParseHexKeyPart(key.substr(16), &ok) : 0;
    if (!ok) {
      LOG_ERROR("am: bad boot argument 'fox.key': expected 32 hexadecimal digits");
      return Error::kInvalidArgument;
    }
    c.key = {k0, k1};
    c.key_given = true;
  } else {
    // The development key: frames are still checked against accidents
    // (other jobs, corruption), but anyone who knows the job id can forge.
    uint8_t job[8];
    net::wire::Store64(job, c.job);
    net::SipKey dev{0x666f782d6465762dull, 0x6b65792d76312d2dull};  // "fox-dev-key-v1--"
    uint64_t h = net::SipHash24(dev, job, sizeof job);
    c.key = {h, ~h};
  }
  if (const char* p = BootArg("fox.peers")) {
    const char* why = nullptr;
    if (!ParsePeers(p, c.port, [](NodeId, uint32_t, uint16_t) {}, &why).ok()) {
      LOG_ERROR("am: bad boot argument 'fox.peers=%s': %s", p, why);
      return Error::kInvalidArgument;
    }
  }
  return c;
}

// ---- start, peers ----

Result<void> Start(const Config& config) {
  if (g.started.load()) return Error::kAlreadyExists;
  g.config = config;
  net::EndpointConfig ec = config.tuning;
  ec.job = config.job;
  ec.key = config.key;
  ec.self = config.self;
  auto* ep = new (std::nothrow) net::AmEndpoint(ec);
  if (ep == nullptr) return Error::kNoMemory;
  g.endpoint = ep;
  g.pump = new event::InterruptTrigger(config.core, [] { Pump(); });
  if (auto r = internal::PlatformOpen(config); !r.ok()) {
    delete g.pump;
    g.pump = nullptr;
    g.endpoint = nullptr;
    delete ep;
    return r;
  }
  g.started.store(true);
  if (core::Current() == config.core) {
    Pump();
  } else {
    event::SpawnRemote(config.core, [] { Pump(); });
  }
  LOG_INFO("am: node %u, job %llu, UDP port %u, %s%s", config.self, (unsigned long long)config.job,
           config.port, config.tuning.aggregate ? "aggregating" : "one message per frame",
           config.key_given ? "" : ", development key (no fox.key)");
  if (const char* p = BootArg("fox.peers")) {
    Result<void> added{};
    (void)ParsePeers(p, config.port, [&](NodeId n, uint32_t ip, uint16_t port) {
      if (n == config.self) return;
      auto r = AddPeer(n, ip, port);
      if (!r.ok() && r.error() != Error::kAlreadyExists) added = r;
    });
    if (!added.ok()) return added;
  }
  return {};
}

bool Started() { return g.started.load(std::memory_order_acquire); }
NodeId Self() { return g.config.self; }

Result<void> AddPeer(NodeId node, uint32_t ip, uint16_t port) {
  if (!Started()) return Error::kNotFound;
  uint64_t address = internal::MakeAddress(ip, port);
  Result<void> r{};
  {
    Locked l;
    r = g.endpoint->AddPeer(node, address, clock::NowNs());
  }
  if (r.ok() || r.error() == Error::kAlreadyExists) internal::PlatformPeerAdded(address);
  if (r.ok()) {
    KickPump(clock::NowNs());
    LOG_DEBUG("am: peer %u at %u.%u.%u.%u:%u", node, ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255, port);
  }
  return r;
}

// ---- receivers ----

Result<void> Register(uint32_t ebb, Receiver* receiver) {
  if (ebb == net::kSystemEbb || receiver == nullptr) return Error::kInvalidArgument;
  Locked l;
  if (FindReceiver(ebb) != nullptr) return Error::kAlreadyExists;
  if (g.receiver_count >= kReceiverSlots / 2) return Error::kOutOfRange;
  size_t i = ReceiverSlotOf(ebb);
  while (g.receivers[i].ebb != 0 && g.receivers[i].ebb != UINT32_MAX) i = (i + 1) % kReceiverSlots;
  // Reuse a tombstone only if the id is not further along (checked above).
  g.receivers[i] = {ebb, receiver};
  ++g.receiver_count;
  if (Mailbox* mb = receiver->AsMailbox(); mb != nullptr && g.mailbox_count < kMaxMailboxes) {
    g.mailboxes[g.mailbox_count++] = mb;
  }
  return {};
}

void Unregister(uint32_t ebb) {
  Locked l;
  for (size_t i = ReceiverSlotOf(ebb), n = 0; n < kReceiverSlots; i = (i + 1) % kReceiverSlots, ++n) {
    if (g.receivers[i].ebb == 0) return;
    if (g.receivers[i].ebb != ebb) continue;
    Receiver* r = g.receivers[i].receiver;
    g.receivers[i] = {UINT32_MAX, nullptr};  // tombstone: keeps later probes going
    --g.receiver_count;
    for (int m = 0; m < g.mailbox_count; ++m) {
      if (g.mailboxes[m] == r) {
        g.mailboxes[m] = g.mailboxes[--g.mailbox_count];
        break;
      }
    }
    return;
  }
}

// ---- mailboxes ----

namespace {
// A record in a mailbox ring: this header, then the data, padded to 8.
struct RecordHeader {
  uint32_t total;  // bytes of the record, header included; a multiple of 8
  uint32_t kind;   // 0 message, 1 skip to the ring's start
  uint32_t from;
  uint16_t handler;
  uint16_t length;
};
static_assert(sizeof(RecordHeader) == 16);
}  // namespace

Mailbox::Mailbox(int core, Handler handler, size_t bytes)
    : core_(core), handler_(std::move(handler)), size_((bytes + 7) & ~size_t{7}) {
  if (size_ < 2 * kFrameReserve) size_ = 2 * kFrameReserve;
  ring_ = new uint8_t[size_];
  auto* t = new event::InterruptTrigger(core_, [this] { Drain(); });
  trigger_ = t;
  if (core::Current() == core_) {
    t->Arm();
  } else {
    event::SpawnRemote(core_, [t] { t->Arm(); });
  }
}

Mailbox::~Mailbox() {
  delete static_cast<event::InterruptTrigger*>(trigger_);
  delete[] ring_;
}

size_t Mailbox::Room() const {
  return size_ - size_t(head_.load(std::memory_order_relaxed) - tail_.load(std::memory_order_acquire));
}

void Mailbox::OnMessage(NodeId from, uint16_t handler, const uint8_t* data, size_t length) {
  size_t total = sizeof(RecordHeader) + ((length + 7) & ~size_t{7});
  uint64_t head = head_.load(std::memory_order_relaxed);
  size_t at = size_t(head % size_);
  size_t to_end = size_ - at;
  size_t need = total + (to_end < total ? to_end : 0);
  if (Room() < need) {
    ++overflows_;  // the reserve check makes this unreachable; counted if not
    LOG_ERROR("am: mailbox overflow: message from node %u lost", from);
    return;
  }
  if (to_end < total) {  // skip to the start (to_end >= 8: everything is 8-aligned)
    RecordHeader skip{uint32_t(to_end), 1, 0, 0, 0};
    std::memcpy(ring_ + at, &skip, to_end < sizeof skip ? to_end : sizeof skip);
    head += to_end;
    at = 0;
  }
  RecordHeader h{uint32_t(total), 0, from, handler, uint16_t(length)};
  std::memcpy(ring_ + at, &h, sizeof h);
  if (length > 0) std::memcpy(ring_ + at + sizeof h, data, length);
  head_.store(head + total, std::memory_order_release);
  static_cast<event::InterruptTrigger*>(trigger_)->Fire();
}

void Mailbox::Drain() {
  static_cast<event::InterruptTrigger*>(trigger_)->Arm();  // before looking: a later message posts again
  uint64_t tail = tail_.load(std::memory_order_relaxed);
  for (int budget = 4096; budget > 0; --budget) {
    if (tail == head_.load(std::memory_order_acquire)) return;
    size_t at = size_t(tail % size_);
    RecordHeader h;
    size_t to_end = size_ - at;
    std::memcpy(&h, ring_ + at, to_end < sizeof h ? to_end : sizeof h);
    if (to_end < sizeof h || h.kind == 1) {
      tail += to_end;
      tail_.store(tail, std::memory_order_release);
      continue;
    }
    handler_(h.from, h.handler, ring_ + at + sizeof h, h.length);
    tail += h.total;
    tail_.store(tail, std::memory_order_release);
  }
  event::Spawn([this] { Drain(); });  // more than a budget's worth: let other events run
}

// ---- sending ----

namespace {
Result<void> SendOrMaybeDefer(NodeId node, uint32_t ebb, uint16_t handler, const void* data, size_t length,
                              bool defer) {
  if (!Started()) return Error::kNotFound;
  if (length > net::kMaxMessageBytes) return Error::kOutOfRange;
  if (ebb == net::kSystemEbb) return Error::kInvalidArgument;
  uint64_t now = clock::NowNs();
  Locked l;
  if (node == g.config.self) {
    if (!MailboxesHaveRoom(sizeof(RecordHeader) + length + 8 + kFrameReserve)) return Error::kBusy;
    ++g.local_messages;
    Dispatch(node, ebb, handler, static_cast<const uint8_t*>(data), length);
    return {};
  }
  auto r = defer ? g.endpoint->SendOrDefer(node, ebb, handler, data, length, now, kTransmit)
                 : g.endpoint->Send(node, ebb, handler, data, length, now, kTransmit);
  if (r.ok()) KickPump(now);
  return r;
}
}  // namespace

Result<void> Send(NodeId node, uint32_t ebb, uint16_t handler, const void* data, size_t length) {
  return SendOrMaybeDefer(node, ebb, handler, data, length, false);
}

Result<void> SendOrDefer(NodeId node, uint32_t ebb, uint16_t handler, const void* data, size_t length) {
  return SendOrMaybeDefer(node, ebb, handler, data, length, true);
}

Result<void> SendWait(NodeId node, uint32_t ebb, uint16_t handler, const void* data, size_t length) {
  for (;;) {
    auto r = Send(node, ebb, handler, data, length);
    if (r.ok() || r.error() != Error::kBusy) return r;
    if (node == g.config.self) {  // a full local mailbox: let its core drain it
      event::Block([](event::Continuation c) {
        auto* cp = new event::Continuation(std::move(c));
        event::Spawn([cp] {
          cp->Resume();
          delete cp;
        });
      });
      continue;
    }
    event::Block([node, length](event::Continuation c) {
      {
        Locked l;
        g.waiters.push_back({node, length, std::move(c)});
        g.have_waiters.store(true, std::memory_order_relaxed);
      }
      g.pump->Fire();
    });
  }
}

void Flush(NodeId node) {
  if (!Started()) return;
  uint64_t now = clock::NowNs();
  Locked l;
  g.endpoint->Flush(node, now, kTransmit);
  KickPump(now);
}

// ---- receiving ----

namespace {
// Drops that usually mean a misconfigured job rather than noise: said once
// per reason every 10 s, naming the sender's address (frames are
// authenticated by the MAC, not the address, so this is only a hint).
void WarnAboutDrop(net::DropReason why, uint64_t from_address, uint64_t now) {
  const char* hint = nullptr;
  switch (why) {
    case net::DropReason::kBadMac: hint = "MAC check failed: is fox.key the same on every node of the job?"; break;
    case net::DropReason::kWrongJob: hint = "for another job: is fox.job the same on every node?"; break;
    case net::DropReason::kWrongDestination: hint = "for another node: are fox.node and fox.peers right?"; break;
    case net::DropReason::kUnknownPeer: hint = "from a node that is not one of this node's peers (fox.peers)"; break;
    case net::DropReason::kBadVersion: hint = "an AM version this node does not speak: mixed fox versions?"; break;
    default: return;
  }
  uint64_t& last = g.last_warned[size_t(why)];
  if (last != 0 && now - last < 10'000'000'000) return;
  last = now;
  uint32_t ip = internal::AddressIp(from_address);
  LOG_WARN("am: dropping frames from %u.%u.%u.%u:%u: %s", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255,
           internal::AddressPort(from_address), hint);
}
}  // namespace

void internal::Deliver(const uint8_t* bytes, size_t length, uint64_t from_address) {
  if (!Started()) return;
  uint64_t now = clock::NowNs();
  Locked l;
  ++g.rx_datagrams;
  g.rx_bytes += length;
  if (!MailboxesHaveRoom(kFrameReserve * (g.config.tuning.channel.recv_window + 1))) {
    ++g.backpressure_drops;
    return;
  }
  auto admit = [now](const net::FrameView& frame) { return Admit(frame, now); };
  net::AmEndpoint::AdmitFn admit_fn(admit);
  net::DropReason why = g.endpoint->OnDatagram(
      bytes, length, now,
      [](NodeId from, const net::AmMessage& m) { Dispatch(from, m.ebb, m.handler, m.data, m.length); }, kTransmit,
      &admit_fn);
  if (why != net::DropReason::kNone) WarnAboutDrop(why, from_address, now);
  // A peer said a node died (Poll acts on it), or senders may have room now.
  if (g.endpoint->notices_pending() || g.have_waiters.load(std::memory_order_relaxed)) g.pump->Fire();
  KickPump(now);
}

// ---- failure detection ----

void OnPeerState(Function<void(NodeId, PeerState)> callback) {
  auto fn = std::make_shared<Function<void(NodeId, PeerState)>>(std::move(callback));
  Locked l;
  g.state_callbacks.push_back({core::Current(), std::move(fn)});
}

PeerState State(NodeId node) {
  if (!Started()) return PeerState::kUnknown;
  Locked l;
  return g.endpoint->State(node);
}

std::vector<NodeId> Peers() {
  std::vector<NodeId> peers;
  if (!Started()) return peers;
  peers.reserve(net::AmEndpoint::kMaxPeers);
  Locked l;
  g.endpoint->ForEachPeer([&](NodeId n) {
    if (peers.size() < peers.capacity()) peers.push_back(n);  // no allocation under the lock
  });
  return peers;
}

double Phi(NodeId node) {
  if (!Started()) return 0;
  Locked l;
  return g.endpoint->Phi(node, clock::NowNs());
}

void NotifyDead(NodeId node) {
  if (!Started() || node == g.config.self) return;
  std::vector<NodeId> dead;
  {
    Locked l;
    g.endpoint->NotifyDead(node, clock::NowNs(), kTransmit, [&](NodeId n, PeerState) { dead.push_back(n); });
  }
  for (NodeId n : dead) {
    LOG_WARN("am: node %u declared dead (by notice), telling the other nodes", n);
    Notify(n, PeerState::kDead);
  }
  g.pump->Fire();  // waiting senders learn it; owed notices go out
}

void DeclareDead(NodeId node) {
  if (!Started()) return;
  std::vector<NodeId> dead;
  {
    Locked l;
    g.endpoint->DeclareDead(node, [&](NodeId n, PeerState) { dead.push_back(n); });
  }
  for (NodeId n : dead) {
    LOG_WARN("am: node %u declared dead (by notice)", n);
    Notify(n, PeerState::kDead);
  }
  if (!dead.empty()) g.pump->Fire();  // waiting senders learn it
}

// ---- counters ----

Stats GetStats() {
  Stats s{};
  if (!Started()) return s;
  {
    Locked l;
    s.endpoint = g.endpoint->counters();
    s.local_messages = g.local_messages;
    s.no_receiver = g.no_receiver;
    s.backpressure_drops = g.backpressure_drops;
    s.tx_datagrams = g.tx_datagrams;
    s.tx_bytes = g.tx_bytes;
    s.tx_failures = g.tx_failures;
    s.rx_datagrams = g.rx_datagrams;
    s.rx_bytes = g.rx_bytes;
  }
  internal::PlatformStats(&s);
  return s;
}

void LogStats() {
  Stats s = GetStats();
  const auto& e = s.endpoint;
  LOG_INFO("am stats: sent %llu msgs (%llu local), delivered %llu, frames flushed %llu (full %llu, timeout %llu), "
           "busy %llu, heartbeats %llu/%llu, tx %llu dgrams %llu B (fail %llu), rx %llu dgrams %llu B, "
           "no_receiver %llu, backpressure %llu, not_am %llu, arp %llu req %llu miss",
           (unsigned long long)e.messages_sent, (unsigned long long)s.local_messages,
           (unsigned long long)e.messages_delivered, (unsigned long long)e.frames_flushed,
           (unsigned long long)e.flush_on_full, (unsigned long long)e.flush_on_timeout,
           (unsigned long long)e.send_busy, (unsigned long long)e.heartbeats_sent,
           (unsigned long long)e.heartbeats_received, (unsigned long long)s.tx_datagrams,
           (unsigned long long)s.tx_bytes, (unsigned long long)s.tx_failures,
           (unsigned long long)s.rx_datagrams, (unsigned long long)s.rx_bytes,
           (unsigned long long)s.no_receiver, (unsigned long long)s.backpressure_drops,
           (unsigned long long)s.rx_not_am, (unsigned long long)s.arp_requests,
           (unsigned long long)s.arp_misses);
  if (s.nic.rx_packets != 0 || s.nic.tx_packets != 0 || s.nic.interrupts != 0) {
    LOG_INFO("am stats: nic rx %llu (dropped %llu), tx %llu (dropped %llu), %llu interrupts",
             (unsigned long long)s.nic.rx_packets, (unsigned long long)s.nic.rx_dropped,
             (unsigned long long)s.nic.tx_packets, (unsigned long long)s.nic.tx_dropped,
             (unsigned long long)s.nic.interrupts);
  }
  if (e.dead_notices_sent != 0 || e.dead_notices_received != 0) {
    LOG_INFO("am stats: death notices sent %llu, received %llu (%llu about this node)",
             (unsigned long long)e.dead_notices_sent, (unsigned long long)e.dead_notices_received,
             (unsigned long long)e.dead_notices_about_self);
  }
  if (e.deferred != 0 || e.deferred_full != 0 || e.deferred_dropped != 0) {
    LOG_INFO("am stats: deferred %llu msgs (buffer full %llu, peer died %llu)", (unsigned long long)e.deferred,
             (unsigned long long)e.deferred_full, (unsigned long long)e.deferred_dropped);
  }
  for (size_t i = 1; i < net::kNumDropReasons; ++i) {
    if (e.drops.count[i] != 0) {
      LOG_INFO("am stats: dropped %s %llu", net::DropReasonName(net::DropReason(i)),
               (unsigned long long)e.drops.count[i]);
    }
  }
}

}  // namespace fox::am
