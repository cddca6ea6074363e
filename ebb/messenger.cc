// The Messenger's large messages (messenger.h): fragments (wire format and
// reassembly in fragments.h) sent as ordinary messages to the Ebb
// kMessengerId, received as events on the Messenger's core, where
// reassembly may allocate; and status requests, answered through Rpc.
#include "fox/ebb/messenger.h"

#include <cstdio>
#include <cstring>

#include "fox/clock.h"
#include "fox/core.h"
#include "fox/ebb/dht.h"
#include "fox/ebb/rpc.h"
#include "fox/event.h"
#include "fox/log.h"
#include "fox/net/frontend_link.h"
#include "fox/net/wire.h"

namespace fox::ebb {
namespace {
constexpr size_t kChunk = net::kMaxMessageBytes - kFragmentHeaderBytes;
}  // namespace

Messenger::Messenger()
    : core_(core::Current()),
      reassembler_(
          kMaxLargeBytes, kMaxPartialBytes,
          [this](uint32_t from, EbbId ebb, HandlerId handler, std::vector<uint8_t> data) {
            Deliver(from, ebb, handler, std::move(data));
          },
          [this](uint32_t from, const char* why) { Dropped(from, why); }),
      direct_enabled_(DirectEnabled()) {
  auto on_message = [this](NodeId from, HandlerId handler, const uint8_t* data, size_t length) {
    OnMessage(from, handler, data, length);
  };
  if (auto r = am::Listen(kMessengerId, core_, on_message); !r.ok()) {
    LOG_ERROR("Messenger: cannot receive large messages: %s", ErrorName(r.error()));
  }
  subscription_ = am::OnPeerState(
      [this](NodeId node, am::PeerState state) {
        if (state == am::PeerState::kAlive) return ProbeEarly(node);
        if (state != am::PeerState::kDead) return;
        ForgetDirect(node);
        size_t dropped = reassembler_.DropFrom(node);
        if (dropped == 0) return;
        LOG_WARN("Messenger: node %u died with %zu large messages unfinished", node, dropped);
        SpinGuard g(lock_);
        stats_.dropped += dropped;
      },
      core_);
  frontend::OnStatusRequest([this] {
    if (reporting_.exchange(true)) return;  // the last round is not over
    event::SpawnRemote(core_, [this] {
      ReportToFrontend();
      reporting_ = false;
    });
  });
}

Messenger::~Messenger() {
  for (auto& [node, peer] : direct_from_) peer_memory::Close(&peer);
  frontend::OnStatusRequest(nullptr);
  am::StopPeerState(subscription_);
  am::Unregister(kMessengerId);
}

// Place 0 of a `fox run` job, asked by the frontend (frontend::OnStatusRequest):
// every live peer's report (QueryStatus), one line each to the frontend:
// "status N" and the report's lines but the per-peer ones, tab-separated.
void Messenger::ReportToFrontend() {
  std::vector<std::pair<NodeId, Future<Result<std::string>>>> asked;
  for (NodeId p : am::Peers()) {
    if (am::State(p) != am::PeerState::kDead) asked.emplace_back(p, QueryStatus(p, 3'000));
  }
  for (auto& [node, future] : asked) {
    Result<std::string> report = future.Block();
    if (!report.ok()) continue;
    std::string line = "status " + std::to_string(node);
    size_t at = 0;
    while (at < report->size()) {
      size_t end = report->find('\n', at);
      if (end == std::string::npos) end = report->size();
      std::string_view item(report->data() + at, end - at);
      at = end + 1;
      if (item.empty() || item.substr(0, 5) == "peer." || item.find('\t') != std::string_view::npos) continue;
      if (line.size() + 1 + item.size() > 4000) break;
      line += '\t';
      line += item;
    }
    if (!frontend::Tell(line).ok()) return;  // not a fox run job, or the frontend went away
  }
}

void Messenger::OnMessage(NodeId from, HandlerId handler, const uint8_t* data, size_t length) {
  switch (Raw(handler)) {
    case kFragment: return reassembler_.OnFragment(from, data, length);
    case kStatusRequest: return AnswerStatus(from, data, length);
    case kDirectProbe: return OnProbe(from, data, length);
    case kDirectAnswer: return OnProbeAnswer(from, data, length);
    case kDirectMessage: return OnDirect(from, data, length);
    case kDirectDone: return OnDirectDone(from, data, length);
    default: return;
  }
}

Result<void> Messenger::ListenLarge(EbbId id, LargeHandler handler, int core) {
  if (id == kNullId) return Error::kInvalidArgument;
  if (core < 0) core = core::Current();
  if (core >= core::Online()) return Error::kOutOfRange;
  LargeListener l{core, std::make_shared<LargeHandler>(std::move(handler))};
  SpinGuard g(lock_);
  if (!handlers_.emplace(id, std::move(l)).second) return Error::kAlreadyExists;
  return {};
}

void Messenger::StopListeningLarge(EbbId id) {
  std::shared_ptr<LargeHandler> gone;  // destroyed outside the lock
  SpinGuard g(lock_);
  auto it = handlers_.find(id);
  if (it == handlers_.end()) return;
  gone = std::move(it->second.handler);
  handlers_.erase(it);
}

Result<void> Messenger::ListenAny(EbbId id, am::Handler handler, int core) {
  if (core < 0) core = core::Current();
  auto shared = std::make_shared<am::Handler>(std::move(handler));
  FOX_TRY(Listen(
      id, [shared](NodeId from, HandlerId h, const uint8_t* data, size_t length) { (*shared)(from, h, data, length); },
      core));
  auto r = ListenLarge(
      id,
      [shared](NodeId from, HandlerId h, std::vector<uint8_t> data) { (*shared)(from, h, data.data(), data.size()); },
      core);
  if (!r.ok()) StopListening(id);
  return r;
}

Result<void> Messenger::ListenAnyOwned(EbbId id, LargeHandler handler, int core) {
  if (core < 0) core = core::Current();
  auto shared = std::make_shared<LargeHandler>(std::move(handler));
  FOX_TRY(Listen(
      id,
      [shared](NodeId from, HandlerId h, const uint8_t* data, size_t length) {
        (*shared)(from, h, std::vector<uint8_t>(data, data + length));
      },
      core));
  auto r = ListenLarge(
      id, [shared](NodeId from, HandlerId h, std::vector<uint8_t> data) { (*shared)(from, h, std::move(data)); }, core);
  if (!r.ok()) StopListening(id);
  return r;
}

Result<void> Messenger::SendAny(NodeId node, EbbId id, HandlerId handler, const void* data, size_t length) {
  if (length > net::kMaxMessageBytes) return SendLarge(node, id, handler, data, length);
  FOX_TRY(am::SendWait(node, id, handler, data, length));
  am::Flush(node);
  return {};
}

Result<void> Messenger::SendAny(NodeId node, EbbId id, HandlerId handler, std::vector<uint8_t> bytes) {
  if (bytes.size() > net::kMaxMessageBytes) return SendLarge(node, id, handler, std::move(bytes));
  return SendAny(node, id, handler, bytes.data(), bytes.size());
}

Result<void> Messenger::SendAny(NodeId node, EbbId id, HandlerId handler, Shared bytes) {
  if (bytes->size() > net::kMaxMessageBytes) return SendLarge(node, id, handler, std::move(bytes));
  return SendAny(node, id, handler, bytes->data(), bytes->size());
}

Messenger::LargeStats Messenger::large_stats() const {
  SpinGuard g(lock_);
  return stats_;
}

Result<void> Messenger::SendLarge(NodeId node, EbbId id, HandlerId handler, const void* data, size_t length) {
  if (id == kNullId) return Error::kInvalidArgument;
  if (length > kMaxLargeBytes) return Error::kOutOfRange;
  const auto* bytes = static_cast<const uint8_t*>(data);
  if (node == am::Self()) return SendLarge(node, id, handler, std::vector<uint8_t>(bytes, bytes + length));
  bool sent = false;
  FOX_TRY(SendDirect(node, id, handler, bytes, length, nullptr, &sent));
  if (!sent) FOX_TRY(SendFragments(node, id, handler, bytes, length));
  SpinGuard g(lock_);
  ++stats_.sent;
  return {};
}

Result<void> Messenger::SendLarge(NodeId node, EbbId id, HandlerId handler, std::vector<uint8_t> bytes) {
  if (id == kNullId) return Error::kInvalidArgument;
  if (bytes.size() > kMaxLargeBytes) return Error::kOutOfRange;
  if (node == am::Self()) {
    event::SpawnRemote(core_, [this, node, id, handler, bytes = std::move(bytes)]() mutable {
      Deliver(node, id, handler, std::move(bytes));
    });
  } else {
    return SendLarge(node, id, handler, std::make_shared<const std::vector<uint8_t>>(std::move(bytes)));
  }
  SpinGuard g(lock_);
  ++stats_.sent;
  return {};
}

Result<void> Messenger::SendLarge(NodeId node, EbbId id, HandlerId handler, Shared bytes) {
  if (id == kNullId) return Error::kInvalidArgument;
  if (bytes->size() > kMaxLargeBytes) return Error::kOutOfRange;
  if (node == am::Self()) return SendLarge(node, id, handler, std::vector<uint8_t>(*bytes));
  bool sent = false;
  FOX_TRY(SendDirect(node, id, handler, bytes->data(), bytes->size(), &bytes, &sent));
  if (!sent) FOX_TRY(SendFragments(node, id, handler, bytes->data(), bytes->size()));
  SpinGuard g(lock_);
  ++stats_.sent;
  return {};
}

Result<void> Messenger::SendFragments(NodeId node, EbbId id, HandlerId handler, const uint8_t* bytes, size_t length) {
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
  return {};
}

void Messenger::Deliver(NodeId from, EbbId id, HandlerId handler, std::vector<uint8_t> data) {
  LargeListener l;
  {
    SpinGuard g(lock_);
    auto it = handlers_.find(id);
    if (it == handlers_.end()) {
      ++stats_.no_handler;
      return;
    }
    l = it->second;
    ++stats_.received;
  }
  if (l.core == core::Current()) {
    (*l.handler)(from, handler, std::move(data));
  } else {
    event::SpawnRemote(l.core, [h = l.handler, from, handler, data = std::move(data)]() mutable {
      (*h)(from, handler, std::move(data));
    });
  }
}

Future<Result<std::string>> Messenger::QueryStatus(NodeId node, uint64_t timeout_ms) {
  if (node == am::Self()) return MakeReadyFuture(Result<std::string>(LocalStatus()));
  return Rpc::Get()->Call(node, kMessengerId, kStatusRequest, nullptr, 0, timeout_ms).Then([](auto f) {
    Result<Rpc::Bytes> r = f.Get();
    if (!r.ok()) return Result<std::string>(r.error());
    return Result<std::string>(std::string(r->begin(), r->end()));
  });
}

// A status request, in the Messenger's listener (an event: the reply may
// wait for the requester's window).
void Messenger::AnswerStatus(NodeId from, const uint8_t* data, size_t length) {
  auto request = Rpc::ParseRequest(data, length);
  if (!request) return;
  std::string report = LocalStatus();
  (void)Rpc::Reply(from, request->id, report.data(), report.size());
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
  am::ForEachCounter(am::GetStats(), [&](const char* name, uint64_t value) {
    add(std::strncmp(name, "nic.", 4) == 0 ? "%s %llu" : "am.%s %llu", name, (unsigned long long)value);
  });
  for (NodeId p : am::Peers()) {
    add("peer.%u %s silent_ms %lld", p, net::PeerStateName(am::State(p)), (long long)am::SilentMs(p));
  }
  LargeStats l = large_stats();
  add("large.sent %llu", (unsigned long long)l.sent);
  add("large.received %llu", (unsigned long long)l.received);
  add("large.dropped %llu", (unsigned long long)l.dropped);
  add("large.direct_sent %llu", (unsigned long long)l.direct_sent);
  add("large.direct_received %llu", (unsigned long long)l.direct_received);
  add("large.probes_refused %llu", (unsigned long long)l.probes_refused);
  if (const Dht* dht = Dht::IfConstructed()) {
    Dht::Stats d = dht->stats();
    add("dht.epoch %llu", (unsigned long long)dht->epoch());
    add("dht.items %llu", (unsigned long long)d.items);
    add("dht.live %llu", (unsigned long long)d.live);
    add("dht.bytes %llu", (unsigned long long)d.bytes);
    add("dht.flushed %llu", (unsigned long long)d.flushed);
    add("dht.deduplicated %llu", (unsigned long long)d.deduplicated);
    add("dht.served_gets %llu", (unsigned long long)d.served_gets);
    add("dht.shared_gets %llu", (unsigned long long)d.shared_gets);
    add("dht.served_writes %llu", (unsigned long long)d.served_writes);
    add("dht.shared_writes %llu", (unsigned long long)d.shared_writes);
    add("dht.served_deletes %llu", (unsigned long long)d.served_deletes);
    add("dht.replicated %llu", (unsigned long long)d.replicated);
    add("dht.not_primary %llu", (unsigned long long)d.not_primary);
    add("dht.bad_requests %llu", (unsigned long long)d.bad_requests);
    add("dht.retries %llu", (unsigned long long)d.retries);
    add("dht.resent %llu", (unsigned long long)d.resent);
    add("dht.rebuilt %llu", (unsigned long long)d.rebuilt);
    add("dht.rebuild_failures %llu", (unsigned long long)d.rebuild_failures);
    add("dht.collected %llu", (unsigned long long)d.collected);
    add("dht.leases_renewed %llu", (unsigned long long)d.leases_renewed);
    add("dht.leases_refused %llu", (unsigned long long)d.leases_refused);
  }
  SpinGuard g(sources_lock_);
  for (const Source& s : sources_) s.source(s.context, &out);
  return out;
}

Result<void> Messenger::AddStatusSource(StatusSource source, const void* context) {
  if (source == nullptr) return Error::kInvalidArgument;
  SpinGuard g(sources_lock_);
  if (sources_.size() >= kMaxStatusSources) return Error::kOutOfRange;
  sources_.push_back(Source{source, context});
  return {};
}

void Messenger::RemoveStatusSource(StatusSource source, const void* context) {
  SpinGuard g(sources_lock_);
  std::erase_if(sources_, [&](const Source& s) { return s.source == source && s.context == context; });
}

// Counts a dropped message (or stray fragment); says why at most once a second.
void Messenger::Dropped(NodeId from, const char* why) {
  uint64_t now = clock::NowNs();
  if (last_warning_ns_ == 0 || now - last_warning_ns_ >= 1'000'000'000) {
    last_warning_ns_ = now;
    LOG_WARN("Messenger: large message from node %u dropped: %s", from, why);
  }
  SpinGuard g(lock_);
  ++stats_.dropped;
}

}  // namespace fox::ebb
