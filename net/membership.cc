// SWIM membership with suspicion (membership.h).
//
// Message (little-endian), at most Membership::kMaxMessageBytes:
//   off size
//     0    1 type          kPing, kAck, kPingReq
//     1    1 update count  0..kUpdatesPerMessage
//     2    2 reserved      0
//     4    4 seq           the probe's number at its origin
//     8    4 target        who is probed (ping, ping-req) or acknowledges (ack)
//    12    4 origin        who probes: acks travel back to it, through the
//                          member that pinged on its behalf if any
//    16   12 per update    u8 kind (alive, suspect, dead), 3 bytes 0,
//                          u32 member, u32 incarnation
//
// Piggybacked updates: one about the message's recipient always goes first
// (a suspected member hears of its suspicion from whoever probes it and
// can refute it at once), then one about the sender (its refutation, with
// every message until sent often enough: among many fresh suspicions in a
// large job it once lost its place and a node paused 0.8 s died); then
// news of suspicions, refutations and deaths, freshest first (most sends
// left); joins last.
#include "fox/net/membership.h"

#include "fox/net/wire.h"

namespace fox::net {

namespace {
constexpr size_t kHeader = 16;
constexpr size_t kUpdateBytes = 12;
static_assert(kHeader + Membership::kUpdatesPerMessage * kUpdateBytes <= Membership::kMaxMessageBytes);
}  // namespace

const char* MemberStateName(MemberState state) {
  switch (state) {
    case MemberState::kJoining: return "joining";
    case MemberState::kAlive: return "alive";
    case MemberState::kSuspected: return "suspected";
    case MemberState::kDead: return "dead";
  }
  return "?";
}

Membership::Membership(const MembershipConfig& config)
    : config_(config), rng_((config.seed ^ (uint64_t(config.self) << 32 | config.self)) | 1) {}

uint32_t Membership::Random() {  // xorshift64*
  rng_ ^= rng_ >> 12;
  rng_ ^= rng_ << 25;
  rng_ ^= rng_ >> 27;
  return uint32_t((rng_ * 0x2545F4914F6CDD1Dull) >> 32);
}

Membership::Member* Membership::Find(NodeId id) {
  auto it = index_.find(id);
  return it == index_.end() ? nullptr : &members_[it->second];
}

const Membership::Member* Membership::Find(NodeId id) const {
  auto it = index_.find(id);
  return it == index_.end() ? nullptr : &members_[it->second];
}

void Membership::AddMember(NodeId id, uint64_t now_ns) {
  if (id == config_.self || index_.count(id) != 0) return;
  uint32_t pos = uint32_t(members_.size());
  members_.push_back(Member{.id = id, .added_ns = now_ns});
  index_.emplace(id, pos);
  ++joining_;
  ++live_;
  // A random place in the probe order.
  order_.push_back(pos);
  std::swap(order_.back(), order_[Random() % order_.size()]);
  if (next_probe_ns_ == 0) next_probe_ns_ = now_ns;
}

MemberState Membership::State(NodeId id) const {
  const Member* m = Find(id);
  return m == nullptr ? MemberState::kDead : m->state;
}

uint64_t Membership::LastHeardNs(NodeId id) const {
  const Member* m = Find(id);
  return m == nullptr ? 0 : m->last_heard_ns;
}

int Membership::Transmissions() const {
  int log2 = 1;
  while ((size_t(1) << log2) < live_ + 2) ++log2;
  return config_.retransmit_mult * log2;
}

// Whether update `a` goes out before `b`: news of failure and refutations
// before joins, then the least sent.
bool Membership::Before(const Update& a, const Update& b) {
  if (a.join != b.join) return !a.join;
  return a.sends_left > b.sends_left;
}

void Membership::Queue(Kind kind, NodeId node, uint32_t incarnation, bool join) {
  Update u{kind, node, incarnation, Transmissions(), join};
  for (int i = 0; i < queued_; ++i) {
    if (queue_[i].node == node) {
      if (join && !queue_[i].join) return;  // a join does not replace news about the member
      queue_[i] = u;
      return;
    }
  }
  if (queued_ < kQueue) {
    queue_[queued_++] = u;
    return;
  }
  int last = 0;  // the one that would go out last: evicted, unless it is the new one
  for (int i = 1; i < queued_; ++i) {
    if (Before(queue_[last], queue_[i])) last = i;
  }
  if (Before(u, queue_[last])) queue_[last] = u;
}

void Membership::Send(Type type, NodeId to, uint32_t seq, NodeId target, NodeId origin, SendFn send) {
  uint8_t m[kMaxMessageBytes];
  int picked[kUpdatesPerMessage];
  int n = 0;
  for (int i = 0; i < queued_ && n < kUpdatesPerMessage; ++i) {
    if (queue_[i].node == to) picked[n++] = i;
  }
  for (int i = 0; i < queued_ && n < kUpdatesPerMessage; ++i) {
    if (queue_[i].node == config_.self) picked[n++] = i;  // our refutation: with every message
  }
  while (n < kUpdatesPerMessage) {  // the freshest of the rest
    int best = -1;
    for (int i = 0; i < queued_; ++i) {
      bool taken = false;
      for (int j = 0; j < n; ++j) taken |= picked[j] == i;
      if (!taken && (best < 0 || Before(queue_[i], queue_[best]))) best = i;
    }
    if (best < 0) break;
    picked[n++] = best;
  }
  m[0] = uint8_t(type);
  m[1] = uint8_t(n);
  wire::Store16(m + 2, 0);
  wire::Store32(m + 4, seq);
  wire::Store32(m + 8, target);
  wire::Store32(m + 12, origin);
  for (int j = 0; j < n; ++j) {
    const Update& u = queue_[picked[j]];
    uint8_t* p = m + kHeader + size_t(j) * kUpdateBytes;
    p[0] = uint8_t(u.kind);
    p[1] = p[2] = p[3] = 0;
    wire::Store32(p + 4, u.node);
    wire::Store32(p + 8, u.incarnation);
  }
  if (!send(to, m, kHeader + size_t(n) * kUpdateBytes)) {
    ++counters_.send_failures;
    return;  // lost: the updates keep their counts
  }
  switch (type) {
    case Type::kPing: ++counters_.pings_sent; break;
    case Type::kAck: ++counters_.acks_sent; break;
    case Type::kPingReq: ++counters_.ping_reqs_sent; break;
  }
  counters_.updates_sent += uint64_t(n);
  for (int j = 0; j < n; ++j) --queue_[picked[j]].sends_left;
  int kept = 0;  // drop the updates sent often enough
  for (int i = 0; i < queued_; ++i) {
    if (queue_[i].sends_left > 0) queue_[kept++] = queue_[i];
  }
  queued_ = kept;
}

void Membership::Join(Member& m, uint64_t now_ns, StateFn on_state) {
  if (m.state != MemberState::kJoining) return;
  m.state = MemberState::kAlive;
  --joining_;
  Queue(Kind::kAlive, m.id, m.incarnation, true);  // the others learn it joined
  on_state(m.id, m.state);
}

void Membership::Suspect(Member& m, uint32_t incarnation, uint64_t now_ns, StateFn on_state) {
  if (m.state == MemberState::kJoining) --joining_;
  bool was = m.state == MemberState::kSuspected;
  if (!was) m.own = false;  // EndProbe marks its own
  m.incarnation = incarnation;
  m.state = MemberState::kSuspected;
  m.suspect_since_ns = now_ns;
  Queue(Kind::kSuspect, m.id, incarnation);
  if (was) return;
  ++suspected_;
  ++counters_.suspicions;
  on_state(m.id, m.state);
}

void Membership::HeardFrom(NodeId from, uint64_t now_ns, StateFn on_state) {
  Member* m = Find(from);
  if (m == nullptr || m->state == MemberState::kDead) return;
  if (now_ns > m->last_heard_ns) m->last_heard_ns = now_ns;
  Join(*m, now_ns, on_state);
}

void Membership::MarkDead(NodeId id) {
  if (id == config_.self) {  // told by the transport's notice: stop judging others
    ++counters_.self_declared_dead;
    return;
  }
  Member* m = Find(id);
  if (m == nullptr || m->state == MemberState::kDead) return;
  if (m->state == MemberState::kJoining) --joining_;
  if (m->state == MemberState::kSuspected) --suspected_;
  m->state = MemberState::kDead;
  --live_;
  Queue(Kind::kDead, id, m->incarnation);
}

// One gossiped update (SWIM's rules: a higher incarnation overrides; for one
// incarnation, suspect overrides alive; dead overrides everything).
void Membership::Apply(Kind kind, NodeId node, uint32_t incarnation, uint64_t now_ns, StateFn on_state) {
  if (node == config_.self) {
    if (kind == Kind::kSuspect && incarnation >= incarnation_) {
      incarnation_ = incarnation + 1;  // refute: alive, newer than the suspicion
      Queue(Kind::kAlive, node, incarnation_);
      ++counters_.refutations;
    } else if (kind == Kind::kSuspect) {
      // A suspicion we refuted already, from a node our refutation has not
      // reached (it was sent often enough and left our queue): say it again.
      // (Ignoring it let a suspecter that had been paused declare us.)
      Queue(Kind::kAlive, node, incarnation_);
    } else if (kind == Kind::kDead && counters_.self_declared_dead++ == 0) {
      // Fail-stop: nothing to refute. The transport's notice path tells the
      // node; peers drop its frames from now on.
    }
    return;
  }
  Member* m = Find(node);
  if (m == nullptr || m->state == MemberState::kDead) return;
  switch (kind) {
    case Kind::kAlive:
      if (m->state == MemberState::kJoining) {
        m->incarnation = incarnation;
        Join(*m, now_ns, on_state);
      } else if (incarnation > m->incarnation) {
        m->incarnation = incarnation;
        if (m->state == MemberState::kSuspected) {
          m->state = MemberState::kAlive;
          m->own = false;
          --suspected_;
          on_state(node, m->state);
        }
        Queue(kind, node, incarnation);
      }
      break;
    case Kind::kSuspect:
      if (incarnation > m->incarnation || (incarnation == m->incarnation && m->state != MemberState::kSuspected)) {
        Suspect(*m, incarnation, now_ns, on_state);
      }
      break;
    case Kind::kDead:
      MarkDead(node);
      on_state(node, MemberState::kDead);
      break;
  }
}

void Membership::OnMessage(NodeId from, const uint8_t* data, size_t len, uint64_t now_ns, SendFn send,
                           StateFn on_state) {
  ++counters_.messages_received;
  Member* sender = Find(from);
  if (sender == nullptr || sender->state == MemberState::kDead) return;
  if (len < kHeader || data[1] > kUpdatesPerMessage || len != kHeader + size_t(data[1]) * kUpdateBytes ||
      data[0] < uint8_t(Type::kPing) || data[0] > uint8_t(Type::kPingReq)) {
    ++counters_.bad_messages;
    return;
  }
  HeardFrom(from, now_ns, on_state);
  for (size_t j = 0; j < data[1]; ++j) {
    const uint8_t* p = data + kHeader + j * kUpdateBytes;
    if (p[0] >= uint8_t(Kind::kAlive) && p[0] <= uint8_t(Kind::kDead)) {
      Apply(Kind(p[0]), wire::Load32(p + 4), wire::Load32(p + 8), now_ns, on_state);
    } else {
      ++counters_.bad_messages;  // an unknown kind (a newer node?): skipped
    }
  }
  auto type = Type(data[0]);
  uint32_t seq = wire::Load32(data + 4);
  NodeId target = wire::Load32(data + 8);
  NodeId origin = wire::Load32(data + 12);
  switch (type) {
    case Type::kPing:
      if (target == config_.self) Send(Type::kAck, from, seq, target, origin, send);
      break;
    case Type::kAck:
      if (origin != config_.self) {  // we pinged for `origin`: pass it on
        if (Find(origin) != nullptr) Send(Type::kAck, origin, seq, target, origin, send);
        break;
      }
      if (Member* t = Find(target); t != nullptr && t->state != MemberState::kDead && t != sender) {
        HeardFrom(target, now_ns, on_state);  // relayed: the target answered someone
      }
      if (probing_ && target == target_ && seq == seq_) acked_ = true;
      break;
    case Type::kPingReq:
      if (const Member* t = Find(target); t != nullptr && t->state != MemberState::kDead) {
        Send(Type::kPing, target, seq, target, origin, send);
      }
      break;
  }
}

NodeId Membership::NextTarget() {
  for (size_t tries = 0; tries < 2 * order_.size() + 1; ++tries) {
    if (next_in_order_ >= order_.size()) {  // a new round: a new order
      for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[Random() % i]);
      next_in_order_ = 0;
      if (order_.empty()) return config_.self;
    }
    const Member& m = members_[order_[next_in_order_++]];
    if (m.state != MemberState::kDead) return m.id;
  }
  return config_.self;  // nobody left
}

void Membership::StartProbe(uint64_t now_ns, SendFn send) {
  next_probe_ns_ = now_ns + config_.probe_period_ns;
  NodeId t = NextTarget();
  if (t == config_.self) return;
  probing_ = true;
  target_ = t;
  ++seq_;
  probe_start_ns_ = now_ns;
  acked_ = false;
  indirect_sent_ = false;
  ++counters_.probes;
  Send(Type::kPing, t, seq_, t, config_.self, send);
}

void Membership::EndProbe(uint64_t now_ns, SendFn send, StateFn on_state) {
  probing_ = false;
  Member* m = Find(target_);
  if (m == nullptr || m->state == MemberState::kDead) return;
  if (acked_ || m->last_heard_ns >= probe_start_ns_) return;
  if (m->state == MemberState::kJoining) return;  // still booting: only the join timeout counts
  ++counters_.probes_failed;
  if (m->state == MemberState::kAlive || (m->state == MemberState::kSuspected && !m->own)) {
    if (m->state == MemberState::kAlive) Suspect(*m, m->incarnation, now_ns, on_state);
    m->suspect_since_ns = now_ns;  // our own timer starts with our own evidence
    m->own = true;
    m->pinged_ns = now_ns;
    Send(Type::kPing, m->id, 0, m->id, config_.self, send);  // carries the suspicion: refute it
  }
}

uint64_t Membership::Tick(uint64_t now_ns, SendFn send, StateFn on_state, DeclareFn declare) {
  // Declared dead: fail-stop. Peers drop our frames, so every probe would
  // fail; judging them would only declare the living dead.
  if (declared_dead()) return UINT64_MAX;
  bool was_paused = last_tick_ns_ != 0 && now_ns - last_tick_ns_ > 2 * config_.probe_period_ns;
  last_tick_ns_ = now_ns;
  uint64_t next = UINT64_MAX;
  if (joining_ + suspected_ != 0) {
    for (Member& m : members_) {
      if (m.state == MemberState::kJoining) {
        uint64_t due = m.added_ns + config_.join_timeout_ns;
        if (now_ns < due) {
          if (due < next) next = due;
          continue;
        }
        // Never heard from, nor of: suspected as by a failed probe. If it
        // runs (others know it, gossip of its join did not reach us) it
        // refutes; if it never booted, it is declared after the suspicion.
        // (Declaring at once killed live members of a 1024-node job whose
        // joins had not reached every node in 60 s.)
        Suspect(m, m.incarnation, now_ns, on_state);
        m.own = true;
        m.pinged_ns = now_ns;
        Send(Type::kPing, m.id, 0, m.id, config_.self, send);
        if (now_ns + config_.suspicion_ns < next) next = now_ns + config_.suspicion_ns;
        continue;
      }
      if (m.state == MemberState::kSuspected && m.own) {
        uint64_t wait = config_.suspicion_ns;
        uint64_t due = m.suspect_since_ns + wait;
        if (now_ns >= due && was_paused) {
          due = now_ns + config_.probe_period_ns;  // our own silence: give it one more period
          m.suspect_since_ns = due - wait;
        } else if (now_ns >= due && m.last_heard_ns > m.suspect_since_ns) {
          // It spoke to us since: alive, but its refutation has not come.
          // Suspect afresh (the update goes to it first).
          Suspect(m, m.incarnation, now_ns, on_state);
          due = now_ns + wait;
        } else if (now_ns >= due) {
          ++counters_.declared_dead;
          declare(m.id);
          MarkDead(m.id);
          continue;
        }
        // Remind it every period: one ping, or its ack, may be lost.
        if (now_ns >= m.pinged_ns + config_.probe_period_ns) {
          m.pinged_ns = now_ns;
          Send(Type::kPing, m.id, 0, m.id, config_.self, send);
        }
        if (m.pinged_ns + config_.probe_period_ns < due) due = m.pinged_ns + config_.probe_period_ns;
        if (due < next) next = due;
      }
    }
  }
  if (probing_ && was_paused) {
    probing_ = false;  // our silence, not the target's
    ++counters_.probes_skipped;
    next_probe_ns_ = now_ns;
  }
  if (probing_) {
    const Member* m = Find(target_);
    bool answered = acked_ || (m != nullptr && m->last_heard_ns >= probe_start_ns_);
    if (!answered && !indirect_sent_ && now_ns >= probe_start_ns_ + config_.probe_timeout_ns) {
      indirect_sent_ = true;
      ++counters_.probes_indirect;
      int sent = 0;
      for (int tries = 0; sent < config_.indirect_probes && tries < 4 * config_.indirect_probes; ++tries) {
        const Member& via = members_[Random() % members_.size()];
        if (via.state != MemberState::kAlive || via.id == target_) continue;
        Send(Type::kPingReq, via.id, seq_, target_, config_.self, send);
        ++sent;
      }
    }
    if (now_ns >= probe_start_ns_ + config_.probe_period_ns) EndProbe(now_ns, send, on_state);
  }
  if (!probing_ && now_ns >= next_probe_ns_) StartProbe(now_ns, send);
  uint64_t probe_next = next_probe_ns_;
  if (probing_) {
    probe_next = probe_start_ns_ + config_.probe_period_ns;
    uint64_t escalate = probe_start_ns_ + config_.probe_timeout_ns;
    if (!indirect_sent_ && escalate > now_ns) probe_next = escalate;  // answered or not, look again then
  }
  return probe_next < next ? probe_next : next;
}

}  // namespace fox::net
