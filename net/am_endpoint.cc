// One node's end of the AM transport (am_endpoint.h).
//
// Per peer: a Channel (reliability), a FrameBuilder over a frame-sized
// buffer (aggregation), the time its first message arrived (flush timer) and
// its state as last told to the driver. The job's membership (failure
// detection) is one net::Membership for all peers. Peers live in an
// open-addressing table keyed by node id; they are never removed (a dead
// node stays dead, its slot remembers it so its late frames are dropped),
// so lookups at interrupt level need no lock of their own.
//
// The deferred buffer is one RecordRing for all peers: a record is the
// peer and Ebb ids (8 bytes) and the message, tagged with its handler id.
// Records leave in ring order per peer, but a peer whose window is full does not
// hold up the others: DrainDeferred marks records sent ("done") wherever
// they are and moves the tail over the leading run of done records. Each
// pass stops early once every peer with waiting records has been found
// full (a per-pass stamp on the peer).
#include "fox/net/am_endpoint.h"

#include <cstddef>
#include <cstring>
#include <new>

#include "fox/net/wire.h"

namespace fox::net {

namespace {
constexpr NodeId kNoNotice = UINT32_MAX;
}  // namespace

struct AmEndpoint::Peer {
  NodeId id = 0;
  uint64_t address = 0;
  PeerState state = PeerState::kAlive;
  Channel channel;
  uint8_t buffer[kMaxFrameBytes];
  FrameBuilder builder;
  uint64_t pending_since = 0;          // when the builder's first message was added
  PeerState told = PeerState::kAlive;  // the state on_state last reported
  uint32_t deferred = 0;               // its records in the deferred buffer
  bool noticed_dead = false;           // a peer said it died; Poll makes it so
  const char* dead_how = nullptr;      // what made it dead: DeadHow
  NodeId notice_from = kNoNotice;      // the peer whose notice did
  NodeId notice_owed = kNoNotice;      // a death notice the window had no room for
  // Settled: the builder holds more than membership messages (which go to
  // peers that may have ended, and need no answer to leave); the sequence
  // number after the last frame that did, once it went to the channel.
  bool builder_matters = false;
  bool settle_set = false;
  uint32_t settle_seq = 0;
  uint64_t fence_sent_ns = 0;  // held dead: when it was last told so
  uint64_t stuck_pass = 0;     // DrainDeferred pass that found it full

  Peer(NodeId peer, uint64_t addr, const FrameAddress& fa)
      : id(peer), address(addr), builder(buffer, sizeof buffer, fa) {}
};

const char* PeerStateName(PeerState state) {
  switch (state) {
    case PeerState::kUnknown: return "unknown";
    case PeerState::kAlive: return "alive";
    case PeerState::kSuspected: return "suspected";
    case PeerState::kDead: return "dead";
  }
  return "?";
}

namespace {
constexpr size_t kSlots = AmEndpoint::kMaxPeers * 2;
size_t SlotOf(NodeId id) { return (uint64_t(id) * 0x9E3779B97F4A7C15ull >> 32) % kSlots; }
}  // namespace

namespace {
constexpr size_t kDeferredMeta = 8;  // u32 peer, u32 ebb
}  // namespace

namespace {
MembershipConfig MembershipOf(const EndpointConfig& c) {
  MembershipConfig m = c.membership;
  m.self = c.self;
  m.seed = c.membership.seed ^ c.job ^ (uint64_t(c.self) << 20);  // a probe order of its own per node
  return m;
}
}  // namespace

AmEndpoint::AmEndpoint(const EndpointConfig& config) : config_(config), membership_(MembershipOf(config)) {
  if (config.deferred_bytes != 0) (void)deferred_.Init(config.deferred_bytes);  // none: SendOrDefer = Send
}

AmEndpoint::~AmEndpoint() {
  for (Peer*& p : slots_) {
    delete p;
    p = nullptr;
  }
}

AmEndpoint::Peer* AmEndpoint::Find(NodeId id) const {
  for (size_t i = SlotOf(id), n = 0; n < kSlots; i = (i + 1) % kSlots, ++n) {
    Peer* p = slots_[i];
    if (p == nullptr) return nullptr;
    if (p->id == id) return p;
  }
  return nullptr;
}

Result<void> AmEndpoint::AddPeer(NodeId id, uint64_t address, uint64_t now_ns) {
  if (id == config_.self) return Error::kInvalidArgument;
  if (Peer* p = Find(id)) {
    if (p->state != PeerState::kDead) p->address = address;
    return Error::kAlreadyExists;
  }
  if (peer_count_ >= kMaxPeers) return Error::kOutOfRange;
  FrameAddress fa{config_.job, config_.self, id};
  auto* p = new (std::nothrow) Peer(id, address, fa);
  if (p == nullptr) return Error::kNoMemory;
  ChannelConfig cc = config_.channel;
  cc.address = fa;
  cc.key = config_.key;
  if (auto r = p->channel.Init(cc); !r.ok()) {
    delete p;
    return r;
  }
  membership_.AddMember(id, now_ns);
  size_t i = SlotOf(id);
  while (slots_[i] != nullptr) i = (i + 1) % kSlots;
  slots_[i] = p;
  ++peer_count_;
  return {};
}

bool AmEndpoint::CanSend(NodeId id, size_t len) const {
  Peer* p = Find(id);
  if (p == nullptr || p->state == PeerState::kDead || p->deferred != 0) return false;
  if (len > kMaxMessageBytes) return false;
  // Room in the aggregation buffer, or a window that takes a flush.
  return (config_.aggregate && p->builder.room() >= len) || p->channel.CanSend();
}

bool AmEndpoint::FlushPeer(Peer& p, uint64_t now_ns, TransmitFn transmit) {
  if (p.builder.empty()) return true;
  auto seq = p.channel.Send(p.builder);
  if (!seq.ok()) return false;  // kBusy: keep it
  if (p.builder_matters) {
    p.settle_seq = *seq + 1;
    p.settle_set = true;
    p.builder_matters = false;
  }
  p.builder.Reset();
  ++counters_.frames_flushed;
  uint64_t address = p.address;
  p.channel.Poll(now_ns, [&](const uint8_t* f, size_t n) { return transmit(address, f, n); });
  return true;
}

Result<void> AmEndpoint::Send(NodeId id, EbbId ebb, HandlerId handler, const void* data, size_t len, uint64_t now_ns,
                              TransmitFn transmit) {
  Peer* p = Find(id);
  if (p == nullptr || p->state == PeerState::kDead) return Error::kPeerDead;
  if (len > kMaxMessageBytes) return Error::kOutOfRange;
  // Deferred messages go first.
  auto r = p->deferred != 0 ? Result<void>(Error::kBusy) : SendNow(*p, ebb, handler, data, len, now_ns, transmit);
  if (!r.ok() && r.error() == Error::kBusy) ++counters_.send_busy;
  return r;
}

Result<void> AmEndpoint::SendOrDefer(NodeId id, EbbId ebb, HandlerId handler, const void* data, size_t len,
                                     uint64_t now_ns, TransmitFn transmit) {
  Peer* p = Find(id);
  if (p == nullptr || p->state == PeerState::kDead) return Error::kPeerDead;
  if (len > kMaxMessageBytes) return Error::kOutOfRange;
  if (p->deferred == 0) {
    auto r = SendNow(*p, ebb, handler, data, len, now_ns, transmit);
    if (r.ok() || r.error() != Error::kBusy) return r;
  }
  if (!Defer(*p, ebb, handler, data, len)) {
    ++counters_.deferred_full;
    return Error::kBusy;
  }
  return {};
}

// Send's work once the peer is known, alive, and not behind deferred
// messages. kBusy when the window and buffer are full (the callers count it:
// Send as send_busy; SendOrDefer and DrainDeferred keep the message waiting).
Result<void> AmEndpoint::SendNow(Peer& p, EbbId ebb, HandlerId handler, const void* data, size_t len, uint64_t now_ns,
                                 TransmitFn transmit) {
  if (!config_.aggregate && !p.builder.empty() && !FlushPeer(p, now_ns, transmit)) return Error::kBusy;
  if (!config_.aggregate && !p.channel.CanSend()) return Error::kBusy;
  auto added = p.builder.Add(ebb, handler, data, len);
  if (!added.ok()) return added.error();
  if (!*added) {  // full: hand the frame to the channel and start a new one
    if (!FlushPeer(p, now_ns, transmit)) return Error::kBusy;
    ++counters_.flush_on_full;
    auto again = p.builder.Add(ebb, handler, data, len);
    if (!again.ok() || !*again) return Error::kOutOfRange;  // cannot happen: len checked
  }
  if (p.builder.message_count() == 1) p.pending_since = now_ns;
  p.builder_matters = true;
  ++counters_.messages_sent;
  if (!config_.aggregate) FlushPeer(p, now_ns, transmit);  // CanSend checked above
  return {};
}

// Appends a record; false when the ring lacks room.
bool AmEndpoint::Defer(Peer& p, EbbId ebb, HandlerId handler, const void* data, size_t len) {
  uint8_t* r = deferred_.Reserve(kDeferredMeta + len, Raw(handler));
  if (r == nullptr) return false;
  std::memcpy(r, &p.id, 4);
  const uint32_t raw_ebb = Raw(ebb);
  std::memcpy(r + 4, &raw_ebb, 4);
  if (len != 0) std::memcpy(r + kDeferredMeta, data, len);
  deferred_.Commit();
  ++deferred_count_;
  if (p.deferred++ == 0) ++peers_with_deferred_;
  ++counters_.deferred;
  return true;
}

// Hands waiting records to their peers' aggregation buffers, in order per
// peer, as far as their windows allow; drops those of dead peers.
void AmEndpoint::DrainDeferred(uint64_t now_ns, TransmitFn transmit) {
  if (deferred_count_ == 0) return;
  uint64_t pass = ++drain_pass_;
  size_t stuck = 0;
  net::RecordRing::Record r;
  for (uint64_t pos = deferred_.tail(); stuck < peers_with_deferred_ && deferred_.At(pos, &r); pos = r.next) {
    if (r.done) continue;
    NodeId id;
    uint32_t ebb;
    std::memcpy(&id, r.payload, 4);
    std::memcpy(&ebb, r.payload + 4, 4);
    Peer* p = Find(id);
    if (p != nullptr && p->stuck_pass == pass) continue;  // an earlier record of this peer is waiting
    if (p == nullptr || p->state == PeerState::kDead) {
      ++counters_.deferred_dropped;
    } else if (auto sr = SendNow(*p, EbbId{ebb}, HandlerId{r.tag}, r.payload + kDeferredMeta, r.length - kDeferredMeta,
                                 now_ns, transmit);
               !sr.ok() && sr.error() == Error::kBusy) {
      p->stuck_pass = pass;  // the message waits on
      ++stuck;
      continue;
    } else if (!sr.ok()) {
      ++counters_.deferred_dropped;  // cannot happen: checked when deferred
    }
    deferred_.MarkDone(r);
    --deferred_count_;
    if (p != nullptr && --p->deferred == 0) --peers_with_deferred_;
  }
  deferred_.Release();
  if (deferred_count_ == 0) deferred_.Clear();
}

void AmEndpoint::Flush(NodeId id, uint64_t now_ns, TransmitFn transmit) {
  if (id != kAnyPeer) {
    if (Peer* p = Find(id); p != nullptr && p->state != PeerState::kDead) FlushPeer(*p, now_ns, transmit);
    return;
  }
  for (Peer* p : slots_) {
    if (p != nullptr && p->state != PeerState::kDead) FlushPeer(*p, now_ns, transmit);
  }
}

size_t AmEndpoint::TakeJoins(Join* out, size_t max) {
  size_t n = join_count_ < max ? join_count_ : max;
  for (size_t i = 0; i < n; ++i) out[i] = joins_[i];
  for (size_t i = n; i < join_count_; ++i) joins_[i - n] = joins_[i];
  join_count_ -= n;
  return n;
}

DropReason AmEndpoint::OnDatagram(const uint8_t* bytes, size_t len, uint64_t now_ns, DeliverFn deliver,
                                  TransmitFn transmit, const AdmitFn* admit, uint64_t from_address) {
  ++counters_.datagrams_received;
  DropReason why = DropReason::kNone;
  auto view = DecodeFrame(bytes, len, config_.key, config_.job, config_.self, &why);
  if (!view.ok()) {
    counters_.drops.Add(why);
    return why;
  }
  Peer* p = Find(view->header().source);
  if (p == nullptr) {
    counters_.drops.Add(DropReason::kUnknownPeer);
    NodeId source = view->header().source;
    bool known = source == config_.self;
    for (size_t i = 0; i < join_count_ && !known; ++i) known = joins_[i].node == source;
    if (from_address != 0 && !known && join_count_ < kMaxPendingJoins) joins_[join_count_++] = {source, from_address};
    return DropReason::kUnknownPeer;
  }
  Peer& peer = *p;
  if (view->header().flags & kFlagFenced) {
    if (peer.state != PeerState::kDead || peer.id == config_.authority) {
      Fence(peer.id);
    } else {
      ++counters_.fences_ignored;  // a dead node's word (a healed partition: its side stops)
    }
    return DropReason::kNone;
  }
  if (peer.state == PeerState::kDead) SendFence(peer, now_ns, transmit);
  auto told = [this](NodeId n, MemberState st) { OnMemberState(n, st); };
  if (peer.state != PeerState::kDead) membership_.HeardFrom(peer.id, now_ns, told);  // any authenticated frame
  if (admit != nullptr && peer.state != PeerState::kDead && !(*admit)(*view)) {
    counters_.drops.Add(DropReason::kNoReceiverYet);
    return DropReason::kNoReceiverYet;
  }
  size_t queued_before = peer.builder.message_count();
  why = peer.channel.OnReceive(*view, now_ns, [&](const FrameView& frame) {
    for (AmMessage m : frame) {
      if (m.ebb == kSystemEbb) {
        if (m.handler == kMembershipHandler) {
          auto send = [&](NodeId to, const uint8_t* d, size_t n) { return SendMembership(to, d, n, now_ns, transmit); };
          membership_.OnMessage(peer.id, m.data, m.length, now_ns, send, told);
        } else if (m.handler == kDeadNoticeHandler && m.length == 4) {
          OnDeadNotice(wire::Load32(m.data), peer.id);
        }
        continue;  // unknown system messages are ignored (a newer peer)
      }
      ++counters_.messages_delivered;
      deliver(peer.id, m);
    }
  });
  if (why != DropReason::kNone) {
    counters_.drops.Add(why);
    if (why == DropReason::kPeerClosed) return why;
  }
  DrainDeferred(now_ns, transmit);  // acks may have opened windows
  uint64_t address = peer.address;
  if (peer.state != PeerState::kDead) {
    // Replies written by the handlers of this frame go out now, all in one
    // frame (with the ack riding on it), rather than after the flush delay;
    // and acks may have opened the window for a buffer that is due.
    bool replied = peer.builder.message_count() > queued_before;
    if (!peer.builder.empty() && (replied || peer.pending_since + config_.flush_delay_ns <= now_ns)) {
      FlushPeer(peer, now_ns, transmit);
    }
    peer.channel.Poll(now_ns, [&](const uint8_t* f, size_t n) { return transmit(address, f, n); });
  }
  return why;
}

uint64_t AmEndpoint::PollPeer(Peer& p, uint64_t now_ns, TransmitFn transmit) {
  if (p.state == PeerState::kDead) return kNoDeadline;
  uint64_t next = kNoDeadline;
  if (!p.builder.empty()) {
    uint64_t due = p.pending_since + config_.flush_delay_ns;
    if (due <= now_ns) {
      if (FlushPeer(p, now_ns, transmit)) ++counters_.flush_on_timeout;
    }
    // Still full: the window is; the acks that open it arrive through
    // OnDatagram, which flushes then.
  }
  if (p.notice_owed != kNoNotice) {
    uint8_t body[4];
    wire::Store32(body, p.notice_owed);
    if (SendSystem(p, kDeadNoticeHandler, body, sizeof body, now_ns, transmit)) {
      p.notice_owed = kNoNotice;
      ++counters_.dead_notices_sent;
    }
  }
  uint64_t address = p.address;
  uint64_t channel_next = p.channel.Poll(now_ns, [&](const uint8_t* f, size_t n) { return transmit(address, f, n); });
  if (channel_next < next) next = channel_next;
  // A buffer waiting for the flush delay needs a timer; one waiting for the
  // window (the channel refused it) is flushed by the acks that open it
  // (OnDatagram), so asking for a timer would only spin.
  if (!p.builder.empty() && p.channel.CanSend() && p.pending_since + config_.flush_delay_ns < next) {
    next = p.pending_since + config_.flush_delay_ns;
  }
  return next;
}

// A transport message (membership, death notice) rides in the aggregation
// buffer, ahead of deferred messages, and goes out now. False when the
// window and buffer are full (the membership counts it as lost).
bool AmEndpoint::SendSystem(Peer& p, HandlerId handler, const void* data, size_t len, uint64_t now_ns,
                            TransmitFn transmit) {
  auto first = p.builder.Add(kSystemEbb, handler, data, len);
  bool added = first.ok() && *first;
  if (first.ok() && !*first && FlushPeer(p, now_ns, transmit)) {
    auto second = p.builder.Add(kSystemEbb, handler, data, len);
    added = second.ok() && *second;
  }
  if (!added) return false;
  if (p.builder.message_count() == 1) p.pending_since = now_ns;
  if (handler != kMembershipHandler) p.builder_matters = true;
  FlushPeer(p, now_ns, transmit);
  return true;
}

void AmEndpoint::NotifyDead(NodeId dead, uint64_t now_ns, TransmitFn transmit, StateFn on_state, const char* how) {
  DeclareDead(dead, on_state, how);
  uint8_t body[4];
  wire::Store32(body, dead);
  for (Peer* p : slots_) {
    if (p == nullptr || p->state == PeerState::kDead) continue;
    if (SendSystem(*p, kDeadNoticeHandler, body, sizeof body, now_ns, transmit)) {
      ++counters_.dead_notices_sent;
    } else {
      p->notice_owed = dead;  // window full: Poll sends it when there is room
    }
  }
}

uint32_t AmEndpoint::ResendDropped(DroppedBeforeFn dropped_before) {
  uint32_t n = 0;
  for (Peer* p : slots_) {
    if (p == nullptr) continue;
    if (uint64_t before = dropped_before(p->address); before != 0) n += p->channel.ResendDroppedBefore(before);
  }
  return n;
}

uint64_t AmEndpoint::Poll(uint64_t now_ns, TransmitFn transmit, StateFn on_state) {
  DrainDeferred(now_ns, transmit);
  KillNoticed(on_state);
  uint64_t next = kNoDeadline;
  for (Peer* p : slots_) {
    if (p == nullptr) continue;
    uint64_t n = PollPeer(*p, now_ns, transmit);
    if (n < next) next = n;
  }
  if (config_.detect_failures) {
    if (now_ns >= membership_due_) {
      auto send = [&](NodeId to, const uint8_t* d, size_t n) { return SendMembership(to, d, n, now_ns, transmit); };
      auto told = [this](NodeId n, MemberState st) { OnMemberState(n, st); };
      // A suspicion that expired here: every peer is told (the notice), as
      // when the frontend saw the node die.
      auto declare = [&](NodeId dead) { NotifyDead(dead, now_ns, transmit, on_state, "own probes"); };
      membership_due_ = membership_.Tick(now_ns, send, told, declare);
    }
    if (membership_due_ < next) next = membership_due_;
  }
  KillNoticed(on_state);  // gossip may have said dead during Tick
  TellStates(on_state);
  if (fenced() && !fence_told_) {  // told by a peer, or by gossip (fenced_by_ stays kAnyPeer)
    fence_told_ = true;
    on_state(config_.self, PeerState::kDead);
  }
  return next;
}

// A peer says node `dead` died (fail-stop: believed at once). The state
// change is made and told by the next Poll, which the driver runs soon
// (notices_pending()).
void AmEndpoint::OnDeadNotice(NodeId dead, NodeId from) {
  ++counters_.dead_notices_received;
  if (dead == config_.self) {
    ++counters_.dead_notices_about_self;  // the job counts this node out (counted: a sender never does this)
    Fence(from);
    return;
  }
  Peer* q = Find(dead);
  if (q == nullptr || q->state == PeerState::kDead) return;
  if (!q->noticed_dead) q->dead_how = "notice", q->notice_from = from;
  q->noticed_dead = true;
  notices_pending_ = true;
}

void AmEndpoint::Kill(Peer& p, StateFn on_state) {
  if (p.state == PeerState::kDead) return;
  p.state = PeerState::kDead;
  p.told = PeerState::kDead;
  p.builder.Reset();
  p.channel.Close();
  membership_.MarkDead(p.id);
  ++counters_.peers_dead;
  on_state(p.id, PeerState::kDead);
}

bool AmEndpoint::SendMembership(NodeId to, const uint8_t* message, size_t len, uint64_t now_ns, TransmitFn transmit) {
  Peer* p = Find(to);
  return p != nullptr && p->state != PeerState::kDead &&
         SendSystem(*p, kMembershipHandler, message, len, now_ns, transmit);
}

// The membership's verdicts, from any context: the peer's state changes
// now (Send and State see it), the driver is told at the next Poll. A
// "dead" heard by gossip is a death notice.
void AmEndpoint::OnMemberState(NodeId member, MemberState state) {
  Peer* p = Find(member);
  if (p == nullptr || p->state == PeerState::kDead) return;
  switch (state) {
    case MemberState::kSuspected:
      if (p->state == PeerState::kAlive) ++counters_.peers_suspected;
      p->state = PeerState::kSuspected;
      states_pending_ = true;
      break;
    case MemberState::kAlive:  // joined, or refuted
      p->state = PeerState::kAlive;
      states_pending_ = true;
      break;
    case MemberState::kDead:
      if (!p->noticed_dead) p->dead_how = "gossip";
      p->noticed_dead = true;
      notices_pending_ = true;
      break;
    case MemberState::kJoining: break;
  }
}

// Death notices and gossip (OnDatagram, Tick mark; the state change is
// made and told here, in normal context).
void AmEndpoint::KillNoticed(StateFn on_state) {
  if (!notices_pending_) return;
  notices_pending_ = false;
  for (Peer* p : slots_) {
    if (p != nullptr && p->noticed_dead) Kill(*p, on_state);
  }
}

void AmEndpoint::TellStates(StateFn on_state) {
  if (!states_pending_) return;
  states_pending_ = false;
  for (Peer* p : slots_) {
    if (p == nullptr || p->state == PeerState::kDead || p->state == p->told) continue;
    p->told = p->state;
    on_state(p->id, p->state);
  }
}

void AmEndpoint::DeclareDead(NodeId id, StateFn on_state, const char* how) {
  Peer* p = Find(id);
  if (p == nullptr || p->state == PeerState::kDead) return;
  p->dead_how = how;
  Kill(*p, on_state);
}

AmEndpoint::DeadCause AmEndpoint::DeadHow(NodeId id) const {
  Peer* p = Find(id);
  if (p == nullptr || p->dead_how == nullptr) return {"?", kAnyPeer};
  return {p->dead_how, p->notice_from};
}

void AmEndpoint::Fence(NodeId by) {
  if (fenced()) return;
  fenced_by_ = by;
  membership_.MarkDead(config_.self);  // fail-stop: stop judging the others
}

// An authenticated frame from a peer held dead: it does not know. Tell it,
// outside its (closed) channel, at most every 500 ms.
void AmEndpoint::SendFence(Peer& p, uint64_t now_ns, TransmitFn transmit) {
  if (p.fence_sent_ns != 0 && now_ns - p.fence_sent_ns < 500'000'000) return;
  p.fence_sent_ns = now_ns;
  uint8_t frame[kHeaderBytes];
  FrameBuilder b(frame, sizeof frame, p.builder.address());
  size_t n = b.Finish(0, 0, 0, config_.key, kFlagFenced);
  if (n != 0 && transmit(p.address, frame, n)) ++counters_.fences_sent;
}

bool AmEndpoint::Settled() const {
  if (deferred_count_ != 0) return false;
  for (const Peer* p : slots_) {
    if (p == nullptr || p->state == PeerState::kDead) continue;
    if (p->builder_matters || p->notice_owed != kNoNotice || p->channel.ack_pending()) return false;
    uint32_t unacked = p->channel.next_send_seq() - p->channel.in_flight();  // the oldest not acknowledged
    if (p->settle_set && int32_t(p->settle_seq - unacked) > 0) return false;
  }
  return true;
}

PeerState AmEndpoint::State(NodeId id) const {
  Peer* p = Find(id);
  return p == nullptr ? PeerState::kUnknown : p->state;
}

const Channel* AmEndpoint::ChannelTo(NodeId id) const {
  Peer* p = Find(id);
  return p == nullptr ? nullptr : &p->channel;
}

void AmEndpoint::ForEachPeer(FunctionRef<void(NodeId)> fn) const {
  for (Peer* p : slots_) {
    if (p != nullptr) fn(p->id);
  }
}

}  // namespace fox::net
