// Messenger: messages between Ebbs on different machines (EbbRT's Messenger
// Ebb), a shared system Ebb at the static id kMessengerId over the
// active-message transport (fox/net/am.h). A message is addressed to a node
// and an Ebb id, with a 16-bit handler id the Ebb defines; on the receiving
// node the Ebb's Listener gets it. The same code runs on compute nodes and in
// Linux programs (native <-> hosted traffic is just traffic).
//
//   auto m = Messenger::Get();
//   m->Listen(my_id, &receiver);                    // receive for my Ebb
//   m->SendWait(node, peer_id, kMyHandler, &req, sizeof req);
//
// Delivery context, backpressure and failure semantics are the transport's:
// see fox/net/am.h. The transport must be started (am::Start) first.
//
// Large messages (up to kMaxLargeBytes: closures, values, pages) go by
// SendLarge: the Messenger cuts them into fragments that travel as ordinary
// messages to its own Ebb id and reassembles them on the receiving node,
// where the Ebb's large-message handler (ListenLarge) gets the whole message
// as an event. Reassembly memory is bounded (kMaxPartialBytes per node);
// fragments from a node that dies are dropped with its unfinished messages.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fox/ebb/ebb_ref.h"
#include "fox/ebb/fragments.h"
#include "fox/ebb/shared_ebb.h"
#include "fox/ebb/static_ids.h"
#include "fox/function.h"
#include "fox/future.h"
#include "fox/net/am.h"
#include "fox/spinlock.h"

namespace fox::ebb {

using NetworkNode = am::NodeId;

class Messenger : public SharedEbb<Messenger> {
 public:
  static EbbRef<Messenger> Get() { return EbbRef<Messenger>(kMessengerId); }

  // A whole message at most this long; all unfinished ones on a node at most
  // kMaxPartialBytes together.
  static constexpr size_t kMaxLargeBytes = size_t(64) << 20;
  static constexpr size_t kMaxPartialBytes = size_t(256) << 20;
  using LargeHandler = Function<void(NetworkNode from, uint16_t handler, std::vector<uint8_t> data)>;

  // Registers the fragment receiver (event context; the first dereference
  // of Messenger::Get() on a node constructs it: do that before am::Start,
  // as any receiver). Large-message handlers run as events on this core.
  Messenger();
  ~Messenger();
  Messenger(const Messenger&) = delete;
  Messenger& operator=(const Messenger&) = delete;

  // This node's id in the job.
  NetworkNode Self() const { return am::Self(); }
  // Routes messages for Ebb `id` on this node to `listener` (one per id).
  // kInvalidArgument for the null id, kAlreadyExists.
  Result<void> Listen(EbbId id, am::Receiver* listener) {
    return id == kNullId ? Result<void>(Error::kInvalidArgument) : am::Register(id, listener);
  }
  void StopListening(EbbId id) { am::Unregister(id); }
  // Queues a message for Ebb `id` on `node` (kBusy: full, retry).
  Result<void> Send(NetworkNode node, EbbId id, uint16_t handler, const void* data, size_t length) {
    return am::Send(node, id, handler, data, length);
  }
  // For listeners replying in delivery context: a message that finds the
  // peer full waits in the transport's deferred buffer (kBusy only when
  // that is full too).
  Result<void> SendOrDefer(NetworkNode node, EbbId id, uint16_t handler, const void* data, size_t length) {
    return am::SendOrDefer(node, id, handler, data, length);
  }
  // The same as Send, blocking the calling event while the peer is full.
  Result<void> SendWait(NetworkNode node, EbbId id, uint16_t handler, const void* data, size_t length) {
    return am::SendWait(node, id, handler, data, length);
  }
  void Flush(NetworkNode node) { am::Flush(node); }

  // Large messages for Ebb `id` on this node go to `handler` (one per id),
  // as events on the Messenger's core, in the order their last fragments
  // arrived (a sending event's messages stay in its order). kInvalidArgument
  // for the null id, kAlreadyExists. Any context but delivery.
  Result<void> ListenLarge(EbbId id, LargeHandler handler);
  void StopListeningLarge(EbbId id);
  // Sends `length` (<= kMaxLargeBytes) bytes to Ebb `id` on `node`, blocking
  // the calling event while the peer's window is full. kOutOfRange (too
  // long), kNotFound (unknown or dead node), kInvalidArgument (null id). To
  // this node: handed to the handler as an event, copied. Event context.
  Result<void> SendLarge(NetworkNode node, EbbId id, uint16_t handler, const void* data, size_t length);

  // A text report of `node`'s state, one "key value" line each: node,
  // platform, cores, uptime, per-core event counters, transport counters
  // and drops by reason, peers with their state and phi, large-message
  // counters (what `fox status` shows). kNotFound if the node is unknown or
  // dies first, kTimedOut after `timeout_ms`. The node answers from its
  // Messenger (every node that messages Ebbs has one). Event context.
  Future<Result<std::string>> QueryStatus(NetworkNode node, uint64_t timeout_ms = 10'000);
  // This node's report.
  std::string LocalStatus() const;

  struct LargeStats {
    uint64_t sent = 0, received = 0;  // whole messages
    uint64_t no_handler = 0;          // received for an Ebb id without a large handler
    uint64_t dropped = 0;             // malformed, over the limits, or from a node that died
  };
  LargeStats large_stats() const;

 private:
  void Deliver(NetworkNode from, EbbId id, uint16_t handler, std::vector<uint8_t> data);
  void AnswerStatus(NetworkNode from, const uint8_t* data, size_t length);
  void OnStatusReply(NetworkNode from, std::vector<uint8_t> data);
  void FailStatus(uint64_t request, Error error);
  void Dropped(NetworkNode from, const char* why);

  int core_;
  std::unique_ptr<am::Mailbox> fragments_;
  std::atomic<uint64_t> next_message_{1};
  mutable SpinLock lock_;
  std::map<EbbId, std::shared_ptr<LargeHandler>> handlers_ GUARDED_BY(lock_);
  LargeStats stats_ GUARDED_BY(lock_);
  struct StatusRequest {
    NetworkNode node;
    Promise<Result<std::string>> promise;
  };
  std::map<uint64_t, StatusRequest> status_requests_ GUARDED_BY(lock_);
  uint64_t next_status_request_ GUARDED_BY(lock_) = 1;
  // Touched only by events on core_ (the fragment mailbox and the
  // peer-state callback both run there).
  Reassembler reassembler_;
  uint64_t last_warning_ns_ = 0;
};

}  // namespace fox::ebb
