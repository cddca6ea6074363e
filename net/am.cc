// The AM driver, shared by both platforms (am.h; the files of the driver
// and its locking rule: am_driver.h): start, sending, the receive path and
// the pump.
//
// Timers. One "pump" runs as an event on the transport core: it calls
// Endpoint::Poll (flush timers, retransmissions, heartbeats, failure
// detector), resumes senders waiting for room, reports peer state changes,
// and arms one timer for the next deadline. Whoever may have made a
// deadline earlier than the armed one (a first message in an aggregation
// buffer, a transmission that starts a retransmission timer) fires the
// pump's InterruptTrigger, which is allocation-free and interrupt-safe.
#include "fox/net/am.h"

#include <cstdio>
#include <cstdlib>
#include <new>

#include "am_driver.h"
#include "am_mailbox.h"
#include "fox/boot_args.h"
#include "fox/clock.h"
#include "fox/exit.h"
#include "fox/log.h"
#include "fox/timer.h"

namespace fox::am {
namespace internal {

Driver g;
thread_local bool t_holding = false;

Locked::Locked() NO_THREAD_SAFETY_ANALYSIS {  // conditional: see the class
  if (t_holding) return;
  enabled_ = g.lock.Lock();
  t_holding = true;
  owner_ = true;
}

Locked::~Locked() NO_THREAD_SAFETY_ANALYSIS {
  if (!owner_) return;
  t_holding = false;
  g.lock.Unlock(enabled_);
}

bool Transmit(uint64_t address, const uint8_t* frame, size_t length) {
  if (!PlatformTransmit(address, frame, length)) {
    g.tx_failures.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  g.tx_datagrams.fetch_add(1, std::memory_order_relaxed);
  g.tx_bytes.fetch_add(length, std::memory_order_relaxed);
  return true;
}

void KickPump(uint64_t now) {
  const auto& t = g.config.tuning;
  uint64_t soonest = t.flush_delay_ns < t.channel.min_rto_ns ? t.flush_delay_ns : t.channel.min_rto_ns;
  if (g.armed_deadline.load(std::memory_order_relaxed) > now + soonest && g.pump != nullptr) {
    g.pump->Fire();
  }
}

namespace {

void Pump();

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

// The job declared this node dead (AmEndpoint::fenced): its peers drop its
// frames and rebuild what it held elsewhere, so it stops now (fail-stop),
// without the program's exit handlers (they would wait on peers that no
// longer answer it).
[[noreturn]] void Fenced() {
  NodeId by;
  {
    Locked l;
    by = g.endpoint->fenced_by();
  }
  if (by == net::AmEndpoint::kAnyPeer) {
    LOG_ERROR("am: the job declared this node dead (gossip): it stops (fail-stop), status %d", kExitFenced);
  } else {
    LOG_ERROR("am: the job declared this node dead (told by node %u): it stops (fail-stop), status %d", by,
              kExitFenced);
  }
  std::fflush(nullptr);
  std::_Exit(kExitFenced);
}

// Nodes that spoke with the job's key without being peers (a job that
// grows: the frontend started them with every member in fox.peers): peers
// from now on. Event context.
void AddJoiners() {
  net::AmEndpoint::Join joins[net::AmEndpoint::kMaxPendingJoins];
  size_t n;
  {
    Locked l;
    n = g.endpoint->TakeJoins(joins, net::AmEndpoint::kMaxPendingJoins);
  }
  for (size_t i = 0; i < n; ++i) {
    uint32_t ip = AddressIp(joins[i].address);
    uint16_t port = AddressPort(joins[i].address);
    if (auto r = am::AddPeer(joins[i].node, ip, port); !r.ok()) {
      LOG_WARN("am: node %u (%u.%u.%u.%u:%u) cannot join: %s", joins[i].node, ip >> 24, (ip >> 16) & 255,
               (ip >> 8) & 255, ip & 255, port, ErrorName(r.error()));
    } else {
      LOG_INFO("am: node %u joined the job from %u.%u.%u.%u:%u", joins[i].node, ip >> 24, (ip >> 16) & 255,
               (ip >> 8) & 255, ip & 255, port);
    }
  }
}

// The pump: an event on the transport core.
void Pump() {
  g.pump->Arm();
  uint64_t now = clock::NowNs();
  AddJoiners();
  std::vector<std::pair<NodeId, PeerState>> changes;
  std::vector<Waiter> ready;
  uint64_t next;
  {
    Locked l;
    if (g.link_resolved.exchange(false, std::memory_order_acq_rel)) {
      g.endpoint->ResendDropped([](uint64_t address) { return PlatformDroppedBefore(address); });
    }
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
  for (auto& [node, state] : changes) {
    if (node == g.config.self) Fenced();  // does not return
    if (state == PeerState::kDead) {
      net::AmEndpoint::DeadCause cause;
      {
        Locked l;
        cause = g.endpoint->DeadHow(node);
      }
      if (cause.from != net::AmEndpoint::kAnyPeer) {
        LOG_WARN("am: node %u declared dead (%s from node %u)", node, cause.how, cause.from);
      } else {
        LOG_WARN("am: node %u declared dead (%s)", node, cause.how);
      }
    } else {
      LOG_INFO("am: node %u %s (silent %lld ms)", node, net::PeerStateName(state), (long long)SilentMs(node));
    }
    NotifySubscribers(node, state);
  }
  ArmTimer(next, now);
}

// Drops that usually mean a misconfigured job rather than noise: said once
// per reason every 10 s, naming the sender's address (frames are
// authenticated by the MAC, not the address, so this is only a hint).
void WarnAboutDrop(net::DropReason why, uint64_t from_address, uint64_t now) REQUIRES(g.lock) {
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
  uint32_t ip = AddressIp(from_address);
  LOG_WARN("am: dropping frames from %u.%u.%u.%u:%u: %s", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255,
           AddressPort(from_address), hint);
}

Result<void> SendOrMaybeDefer(NodeId node, EbbId ebb, HandlerId handler, const void* data, size_t length, bool defer) {
  if (!Started()) return Error::kNotFound;
  if (length > net::kMaxMessageBytes) return Error::kOutOfRange;
  if (ebb == net::kSystemEbb) return Error::kInvalidArgument;
  uint64_t now = clock::NowNs();
  Locked l;
  if (node == g.config.self) {
    if (!MailboxesHaveRoom(CoreMailbox::WorstCase(length) + FrameReserve())) return Error::kBusy;
    ++g.counters.local_messages;
    Dispatch(node, ebb, handler, static_cast<const uint8_t*>(data), length);
    return {};
  }
  auto r = defer ? g.endpoint->SendOrDefer(node, ebb, handler, data, length, now, kTransmit)
                 : g.endpoint->Send(node, ebb, handler, data, length, now, kTransmit);
  if (r.ok()) KickPump(now);
  return r;
}

}  // namespace

void Deliver(const uint8_t* bytes, size_t length, uint64_t from_address) {
  if (!Started()) return;
  uint64_t now = clock::NowNs();
  Locked l;
  ++g.counters.rx_datagrams;
  g.counters.rx_bytes += length;
  // Room for every frame the channel may deliver now (this one and those
  // it holds out of order): what is acknowledged must never be dropped.
  if (!MailboxesHaveRoom(FrameReserve() * (g.config.tuning.channel.recv_window + 1))) {
    ++g.counters.backpressure_drops;
    return;
  }
  auto admit = [now](const net::FrameView& frame) {
    g.lock.AssertHeld();
    return Admit(frame, now);
  };
  net::AmEndpoint::AdmitFn admit_fn(admit);
  net::DropReason why = g.endpoint->OnDatagram(
      bytes, length, now,
      [](NodeId from, const net::AmMessage& m) {
        g.lock.AssertHeld();
        Dispatch(from, m.ebb, m.handler, m.data, m.length);
      },
      kTransmit, &admit_fn, from_address);
  bool join = why == net::DropReason::kUnknownPeer && g.endpoint->joins_pending();  // not a misconfiguration
  if (why != net::DropReason::kNone && !join) WarnAboutDrop(why, from_address, now);
  // A peer said a node died (Poll acts on it), a node joins (the pump adds
  // it), or senders may have room now.
  if (g.endpoint->notices_pending() || g.endpoint->joins_pending() || g.have_waiters.load(std::memory_order_relaxed)) {
    g.pump->Fire();
  }
  KickPump(now);
}

void LinkResolved() {
  g.link_resolved.store(true, std::memory_order_release);
  if (g.pump != nullptr) g.pump->Fire();
}

}  // namespace internal

using internal::g;
using internal::Locked;

Result<void> Start(const Config& config) {
  if (g.started.load()) return Error::kAlreadyExists;
  g.config = config;
  net::EndpointConfig ec = config.tuning;
  ec.job = config.job;
  ec.key = config.key;
  ec.self = config.self;
  auto* ep = new (std::nothrow) net::AmEndpoint(ec);
  if (ep == nullptr) return Error::kNoMemory;
  {
    Locked l;
    g.endpoint = ep;
  }
  g.pump = new event::InterruptTrigger(config.core, [] { internal::Pump(); });
  if (auto r = internal::PlatformOpen(config); !r.ok()) {
    delete g.pump;
    g.pump = nullptr;
    {
      Locked l;
      g.endpoint = nullptr;
    }
    delete ep;
    return r;
  }
  g.started.store(true);
  std::atexit([] {
    if (!Linger(kLingerAtExitMs))
      LOG_WARN("am: exiting with messages unacknowledged after %llu ms", (unsigned long long)kLingerAtExitMs);
  });
  if (core::Current() == config.core) {
    internal::Pump();
  } else {
    event::SpawnRemote(config.core, [] { internal::Pump(); });
  }
  LOG_INFO("am: node %u, job %llu, UDP port %u, %s%s", config.self, (unsigned long long)config.job, config.port,
           config.tuning.aggregate ? "aggregating" : "one message per frame",
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
uint64_t SuspicionMs() { return g.config.tuning.membership.suspicion_ns / 1'000'000; }

Result<void> Send(NodeId node, EbbId ebb, HandlerId handler, const void* data, size_t length) {
  return internal::SendOrMaybeDefer(node, ebb, handler, data, length, false);
}

Result<void> SendOrDefer(NodeId node, EbbId ebb, HandlerId handler, const void* data, size_t length) {
  return internal::SendOrMaybeDefer(node, ebb, handler, data, length, true);
}

Result<void> SendWait(NodeId node, EbbId ebb, HandlerId handler, const void* data, size_t length) {
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
  g.endpoint->Flush(node, now, internal::kTransmit);
  internal::KickPump(now);
}

bool Linger(uint64_t max_ms) {
  if (!Started()) return true;
  Flush();
  uint64_t until = clock::NowNs() + max_ms * 1'000'000;
  for (;;) {
    {
      Locked l;
      if (g.endpoint->Settled()) return true;
    }
    if (clock::NowNs() >= until) return false;
    timer::Sleep(5'000'000);  // this event only: the pump retransmits and acknowledges meanwhile
  }
}

}  // namespace fox::am
