// The Messenger's large messages (messenger.h): fragments (wire format and
// reassembly in fragments.h) sent as ordinary messages to the Ebb
// kMessengerId, received by a Mailbox so that reassembly runs as events on
// one core and may allocate.
#include "fox/ebb/messenger.h"

#include <cstdio>
#include <cstring>

#include "fox/clock.h"
#include "fox/core.h"
#include "fox/event.h"
#include "fox/log.h"
#include "fox/net/wire.h"
#include "fox/timer.h"

namespace fox::ebb {
namespace {
// Handlers of the Ebb kMessengerId: fragments, and status requests (u64
// request id); status replies travel as large messages (u64 request id, text).
constexpr uint16_t kFragment = 1;
constexpr uint16_t kStatusRequest = 2;
constexpr uint16_t kStatusReply = 3;
constexpr size_t kChunk = net::kMaxMessageBytes - kFragmentHeaderBytes;
}  // namespace

Messenger::Messenger()
    : core_(core::Current()),
      fragments_(std::make_unique<am::Mailbox>(
          core_, [this](am::NodeId from, uint16_t handler, const uint8_t* data, size_t length) {
            if (handler == kFragment) reassembler_.OnFragment(from, data, length);
            if (handler == kStatusRequest) AnswerStatus(from, data, length);
          })),
      reassembler_(
          kMaxLargeBytes, kMaxPartialBytes,
          [this](uint32_t from, uint32_t ebb, uint16_t handler, std::vector<uint8_t> data) {
            Deliver(from, ebb, handler, std::move(data));
          },
          [this](uint32_t from, const char* why) { Dropped(from, why); }) {
  if (auto r = am::Register(kMessengerId, fragments_.get()); !r.ok()) {
    LOG_ERROR("Messenger: cannot receive large messages: %s", ErrorName(r.error()));
  }
  {
    SpinGuard g(lock_);
    handlers_[kMessengerId] = std::make_shared<LargeHandler>(
        [this](NetworkNode from, uint16_t handler, std::vector<uint8_t> data) {
          if (handler == kStatusReply) OnStatusReply(from, std::move(data));
        });
  }
  am::OnPeerState([this](am::NodeId node, am::PeerState state) {
    if (state != am::PeerState::kDead) return;
    std::vector<uint64_t> orphaned;
    {
      SpinGuard g(lock_);
      for (auto& [id, r] : status_requests_) {
        if (r.node == node) orphaned.push_back(id);
      }
    }
    for (uint64_t id : orphaned) FailStatus(id, Error::kNotFound);
    size_t dropped = reassembler_.DropFrom(node);
    if (dropped == 0) return;
    LOG_WARN("Messenger: node %u died with %zu large messages unfinished", node, dropped);
    SpinGuard g(lock_);
    stats_.dropped += dropped;
  });
}

Messenger::~Messenger() { am::Unregister(kMessengerId); }

Result<void> Messenger::ListenLarge(EbbId id, LargeHandler handler) {
  if (id == kNullId) return Error::kInvalidArgument;
  auto h = std::make_shared<LargeHandler>(std::move(handler));
  SpinGuard g(lock_);
  if (!handlers_.emplace(id, std::move(h)).second) return Error::kAlreadyExists;
  return {};
}

void Messenger::StopListeningLarge(EbbId id) {
  std::shared_ptr<LargeHandler> gone;  // destroyed outside the lock
  SpinGuard g(lock_);
  auto it = handlers_.find(id);
  if (it == handlers_.end()) return;
  gone = std::move(it->second);
  handlers_.erase(it);
}

Messenger::LargeStats Messenger::large_stats() const {
  SpinGuard g(lock_);
  return stats_;
}

Result<void> Messenger::SendLarge(NetworkNode node, EbbId id, uint16_t handler, const void* data, size_t length) {
  if (id == kNullId) return Error::kInvalidArgument;
  if (length > kMaxLargeBytes) return Error::kOutOfRange;
  const auto* bytes = static_cast<const uint8_t*>(data);
  if (node == am::Self()) {
    std::vector<uint8_t> copy(bytes, bytes + length);
    event::SpawnRemote(core_, [this, node, id, handler, copy = std::move(copy)]() mutable {
      Deliver(node, id, handler, std::move(copy));
    });
  } else {
    uint64_t message = next_message_.fetch_add(1, std::memory_order_relaxed);
    uint8_t fragment[net::kMaxMessageBytes];
    size_t offset = 0;
    do {  // an empty message is one empty fragment
      size_t chunk = length - offset < kChunk ? length - offset : kChunk;
      EncodeFragmentHeader(fragment, message, id, handler, uint32_t(length), uint32_t(offset));
      if (chunk != 0) std::memcpy(fragment + kFragmentHeaderBytes, bytes + offset, chunk);
      FOX_TRY(am::SendWait(node, kMessengerId, kFragment, fragment, kFragmentHeaderBytes + chunk));
      offset += chunk;
    } while (offset < length);
    am::Flush(node);
  }
  SpinGuard g(lock_);
  ++stats_.sent;
  return {};
}

void Messenger::Deliver(NetworkNode from, EbbId id, uint16_t handler, std::vector<uint8_t> data) {
  std::shared_ptr<LargeHandler> h;
  {
    SpinGuard g(lock_);
    auto it = handlers_.find(id);
    if (it == handlers_.end()) {
      ++stats_.no_handler;
      return;
    }
    h = it->second;
    ++stats_.received;
  }
  (*h)(from, handler, std::move(data));
}

Future<Result<std::string>> Messenger::QueryStatus(NetworkNode node, uint64_t timeout_ms) {
  Promise<Result<std::string>> promise;
  auto future = promise.GetFuture();
  if (node == am::Self()) {
    promise.SetValue(LocalStatus());
    return future;
  }
  uint64_t id;
  {
    SpinGuard g(lock_);
    id = next_status_request_++;
    status_requests_.emplace(id, StatusRequest{node, std::move(promise)});
  }
  uint8_t body[8];
  net::wire::Store64(body, id);
  if (auto r = am::SendWait(node, kMessengerId, kStatusRequest, body, sizeof body); !r.ok()) {
    FailStatus(id, r.error());
    return future;
  }
  am::Flush(node);
  timer::Start(timeout_ms * 1'000'000, [this, id] { FailStatus(id, Error::kTimedOut); });
  return future;
}

void Messenger::FailStatus(uint64_t request, Error error) {
  Promise<Result<std::string>> promise;
  {
    SpinGuard g(lock_);
    auto it = status_requests_.find(request);
    if (it == status_requests_.end()) return;  // answered already
    promise = std::move(it->second.promise);
    status_requests_.erase(it);
  }
  promise.SetValue(error);
}

void Messenger::OnStatusReply(NetworkNode from, std::vector<uint8_t> data) {
  if (data.size() < 8) return;
  uint64_t id = net::wire::Load64(data.data());
  Promise<Result<std::string>> promise;
  {
    SpinGuard g(lock_);
    auto it = status_requests_.find(id);
    if (it == status_requests_.end() || it->second.node != from) return;  // late: timed out
    promise = std::move(it->second.promise);
    status_requests_.erase(it);
  }
  promise.SetValue(std::string(reinterpret_cast<const char*>(data.data() + 8), data.size() - 8));
}

// A status request, in the fragment mailbox's event: the answer (which may
// wait for the requester's window) goes from an event of its own.
void Messenger::AnswerStatus(NetworkNode from, const uint8_t* data, size_t length) {
  if (length != 8) return;
  uint64_t id = net::wire::Load64(data);
  event::Spawn([this, from, id] {
    std::string report = LocalStatus();
    std::vector<uint8_t> reply(8 + report.size());
    net::wire::Store64(reply.data(), id);
    std::memcpy(reply.data() + 8, report.data(), report.size());
    (void)SendLarge(from, kMessengerId, kStatusReply, reply.data(), reply.size());
  });
}

std::string Messenger::LocalStatus() const {
  std::string out;
  char line[160];
  auto add = [&](const char* fmt, auto... args) {
    std::snprintf(line, sizeof line, fmt, args...);
    out += line;
    out += '\n';
  };
#ifdef FOX_NATIVE
  const char* platform = "native";
#else
  const char* platform = "hosted";
#endif
  add("node %u", am::Self());
  add("platform %s", platform);
  add("cores %d", core::Online());
  add("uptime_ms %llu", (unsigned long long)(clock::NowNs() / 1'000'000));
  for (int c = 0; c < core::Online(); ++c) {
    event::Stats e = event::GetStats(c);
    add("core%d.events %llu", c, (unsigned long long)(e.local_events + e.remote_events));
    add("core%d.sleeps %llu", c, (unsigned long long)e.sleeps);
    add("core%d.wakeup_ipis %llu", c, (unsigned long long)e.wakeup_ipis);
  }
  am::Stats s = am::GetStats();
  const auto& e = s.endpoint;
  add("am.messages_sent %llu", (unsigned long long)e.messages_sent);
  add("am.messages_delivered %llu", (unsigned long long)e.messages_delivered);
  add("am.frames_flushed %llu", (unsigned long long)e.frames_flushed);
  add("am.send_busy %llu", (unsigned long long)e.send_busy);
  add("am.deferred %llu", (unsigned long long)e.deferred);
  add("am.heartbeats_sent %llu", (unsigned long long)e.heartbeats_sent);
  add("am.heartbeats_received %llu", (unsigned long long)e.heartbeats_received);
  add("am.tx_datagrams %llu", (unsigned long long)s.tx_datagrams);
  add("am.rx_datagrams %llu", (unsigned long long)s.rx_datagrams);
  add("am.no_receiver %llu", (unsigned long long)s.no_receiver);
  add("am.dead_notices_received %llu", (unsigned long long)e.dead_notices_received);
  for (size_t i = 1; i < net::kNumDropReasons; ++i) {
    if (e.drops.count[i] != 0) {
      add("am.dropped.%s %llu", net::DropReasonName(net::DropReason(i)), (unsigned long long)e.drops.count[i]);
    }
  }
  add("nic.rx_packets %llu", (unsigned long long)s.nic.rx_packets);
  add("nic.tx_packets %llu", (unsigned long long)s.nic.tx_packets);
  add("nic.interrupts %llu", (unsigned long long)s.nic.interrupts);
  for (NetworkNode p : am::Peers()) {
    add("peer.%u %s phi %.1f", p, net::PeerStateName(am::State(p)), am::Phi(p));
  }
  LargeStats l = large_stats();
  add("large.sent %llu", (unsigned long long)l.sent);
  add("large.received %llu", (unsigned long long)l.received);
  add("large.dropped %llu", (unsigned long long)l.dropped);
  return out;
}

// Counts a dropped message (or stray fragment); says why at most once a second.
void Messenger::Dropped(NetworkNode from, const char* why) {
  uint64_t now = clock::NowNs();
  if (last_warning_ns_ == 0 || now - last_warning_ns_ >= 1'000'000'000) {
    last_warning_ns_ = now;
    LOG_WARN("Messenger: large message from node %u dropped: %s", from, why);
  }
  SpinGuard g(lock_);
  ++stats_.dropped;
}

}  // namespace fox::ebb
