// Rpc (rpc.h): pending calls by request id, replies as small or large
// messages to kRpcId, timeouts by a periodic sweep, failure on death.
#include "fox/ebb/rpc.h"

#include <cstring>

#include "fox/clock.h"
#include "fox/core.h"
#include "fox/ebb/messenger.h"
#include "fox/log.h"
#include "fox/net/wire.h"
#include "fox/timer.h"

namespace fox::ebb {
namespace {
constexpr HandlerId kReplyHandler{1};
constexpr uint64_t kSweepNs = 50'000'000;
}  // namespace

Rpc::Rpc() : core_(core::Current()) {
  auto on_reply = [this](NodeId from, HandlerId handler, const uint8_t* data, size_t length) {
    if (handler == kReplyHandler) OnReply(from, data, length);
  };
  // A large reply's buffer becomes its bytes (the header moved out, no new buffer).
  auto on_large = [this](NodeId from, HandlerId handler, std::vector<uint8_t> data) {
    if (handler == kReplyHandler) OnLargeReply(from, std::move(data));
  };
  if (auto r = Messenger::Get()->Listen(kRpcId, on_reply, core_); !r.ok()) {
    LOG_ERROR("Rpc: cannot receive replies: %s", ErrorName(r.error()));
  } else if (auto large = Messenger::Get()->ListenLarge(kRpcId, on_large, core_); !large.ok()) {
    LOG_ERROR("Rpc: cannot receive large replies: %s", ErrorName(large.error()));
  }
  subscription_ = am::OnPeerState(
      [this](NodeId node, am::PeerState state) {
        if (state == am::PeerState::kDead) FailNode(node);
      },
      core_);
}

Rpc::~Rpc() {
  am::StopPeerState(subscription_);
  Messenger::Get()->StopListeningAny(kRpcId);
}

Future<Result<Rpc::Bytes>> Rpc::Call(NodeId node, EbbId ebb, HandlerId handler, const void* body, size_t length,
                                     uint64_t timeout_ms) {
  if (length + kRequestHeader > Messenger::kMaxLargeBytes) return MakeReadyFuture(Result<Bytes>(Error::kOutOfRange));
  std::vector<uint8_t> message(kRequestHeader + length);
  if (length != 0) std::memcpy(message.data() + kRequestHeader, body, length);
  return Call(node, ebb, handler, std::move(message), timeout_ms);
}

Future<Result<Rpc::Bytes>> Rpc::Call(NodeId node, EbbId ebb, HandlerId handler, std::vector<uint8_t> message,
                                     uint64_t timeout_ms) {
  return Call(node, ebb, handler, std::make_shared<std::vector<uint8_t>>(std::move(message)), timeout_ms);
}

Future<Result<Rpc::Bytes>> Rpc::Call(NodeId node, EbbId ebb, HandlerId handler,
                                     std::shared_ptr<std::vector<uint8_t>> message, uint64_t timeout_ms) {
  Promise<Result<Bytes>> promise;
  auto future = promise.GetFuture();
  if (message->size() < kRequestHeader) {
    promise.SetValue(Error::kInvalidArgument);
    return future;
  }
  if (message->size() > Messenger::kMaxLargeBytes) {
    promise.SetValue(Error::kOutOfRange);
    return future;
  }
  if (node != am::Self() && am::State(node) != am::PeerState::kAlive && am::State(node) != am::PeerState::kSuspected) {
    // Dead, or not seen alive yet (a node that has not joined).
    promise.SetValue(am::State(node) == am::PeerState::kDead ? Error::kPeerDead : Error::kNotFound);
    return future;
  }
  uint64_t id;
  bool start_sweep;
  {
    SpinGuard g(lock_);
    id = next_id_++;
    uint64_t deadline = timeout_ms == 0 ? UINT64_MAX : clock::NowNs() + timeout_ms * 1'000'000;
    pending_.emplace(id, Pending{node, deadline, std::move(promise)});
    ++stats_.calls;
    start_sweep = !sweeping_;
    sweeping_ = true;
  }
  if (start_sweep) {
    event::SpawnRemote(core_, [this] { timer::StartPeriodic(kSweepNs, [this] { Sweep(); }); });
  }
  net::wire::Store64(message->data(), id);
  Result<void> sent = Messenger::Get()->SendAny(node, ebb, handler, Messenger::Shared(std::move(message)));
  if (!sent.ok()) Complete(id, node, sent.error());
  return future;
}

std::optional<Rpc::Request> Rpc::ParseRequest(const uint8_t* data, size_t length) {
  if (length < 8) return std::nullopt;
  return Request{net::wire::Load64(data), data + 8, length - 8};
}

Result<void> Rpc::Send(NodeId client, uint64_t id, Error status, const void* data, size_t length) {
  std::vector<uint8_t> reply(kReplyHeader + length);
  if (length != 0) std::memcpy(reply.data() + kReplyHeader, data, length);
  return Send(client, id, status, std::move(reply));
}

Result<void> Rpc::Send(NodeId client, uint64_t id, Error status, std::vector<uint8_t> reply) {
  if (reply.size() < kReplyHeader) return Error::kInvalidArgument;
  net::wire::Store64(reply.data(), id);
  net::wire::Store32(reply.data() + 8, uint32_t(status));
  return Messenger::Get()->SendAny(client, kRpcId, kReplyHandler, std::move(reply));
}

Result<void> Rpc::Reply(NodeId client, uint64_t id, const void* data, size_t length) {
  return Send(client, id, Error::kOk, data, length);
}

Result<void> Rpc::Reply(NodeId client, uint64_t id, std::vector<uint8_t> message) {
  return Send(client, id, Error::kOk, std::move(message));
}

Result<void> Rpc::Fail(NodeId client, uint64_t id, Error error) {
  return Send(client, id, error == Error::kOk ? Error::kInvalidArgument : error, nullptr, 0);
}

void Rpc::OnReply(NodeId from, const uint8_t* data, size_t length) {
  if (length < kReplyHeader) {
    SpinGuard g(lock_);
    ++stats_.stray_replies;
    return;
  }
  uint64_t id = net::wire::Load64(data);
  auto status = static_cast<Error>(net::wire::Load32(data + 8));
  if (status != Error::kOk) {
    Complete(id, from, status);
  } else {
    Complete(id, from, Bytes(data + kReplyHeader, data + length));
  }
}

void Rpc::OnLargeReply(NodeId from, std::vector<uint8_t> data) {
  if (data.size() < kReplyHeader) return OnReply(from, data.data(), data.size());
  uint64_t id = net::wire::Load64(data.data());
  auto status = static_cast<Error>(net::wire::Load32(data.data() + 8));
  if (status != Error::kOk) return Complete(id, from, status);
  data.erase(data.begin(), data.begin() + long(kReplyHeader));
  Complete(id, from, std::move(data));
}

// Fulfils call `id` if it is still pending and was made to `from`.
void Rpc::Complete(uint64_t id, NodeId from, Result<Bytes> result) {
  Promise<Result<Bytes>> promise;
  {
    SpinGuard g(lock_);
    auto it = pending_.find(id);
    if (it == pending_.end() || it->second.node != from) {
      ++stats_.stray_replies;
      return;
    }
    promise = std::move(it->second.promise);
    pending_.erase(it);
    if (result.ok()) {
      ++stats_.replies;
    } else {
      ++stats_.failures;
    }
  }
  promise.SetValue(std::move(result));
}

void Rpc::Sweep() {
  uint64_t now = clock::NowNs();
  std::vector<Promise<Result<Bytes>>> expired;
  {
    SpinGuard g(lock_);
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->second.deadline_ns > now) {
        ++it;
        continue;
      }
      expired.push_back(std::move(it->second.promise));
      it = pending_.erase(it);
      ++stats_.timeouts;
    }
  }
  for (auto& p : expired) p.SetValue(Error::kTimedOut);
}

void Rpc::FailNode(NodeId node) {
  std::vector<Promise<Result<Bytes>>> failed;
  {
    SpinGuard g(lock_);
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->second.node != node) {
        ++it;
        continue;
      }
      failed.push_back(std::move(it->second.promise));
      it = pending_.erase(it);
      ++stats_.dead;
    }
  }
  for (auto& p : failed) p.SetValue(Error::kPeerDead);
}

Rpc::Stats Rpc::stats() const {
  SpinGuard g(lock_);
  return stats_;
}

size_t Rpc::pending() const {
  SpinGuard g(lock_);
  return pending_.size();
}

}  // namespace fox::ebb
