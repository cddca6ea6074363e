// Rpc: request and reply between Ebbs on different nodes, the one helper
// every protocol uses (GlobalIdMap, Messenger::QueryStatus, the APGAS
// runtime, the Dht) instead of writing its own request ids, promises,
// timeouts and death handling. A shared system Ebb at kRpcId on every node.
//
// Client:
//   auto reply = Rpc::Get()->Call(node, kMyEbb, kMyRequest, &req, sizeof req).Block();
//   if (!reply.ok()) ... reply.error(): kPeerDead (node dead, or died before
//                        answering), kNotFound (not seen alive yet), kTimedOut,
//                        or the server's error
// Server (the Ebb's Listen handler, an event; ListenLarge too for requests
// longer than kMaxSmallRequest):
//   auto request = Rpc::ParseRequest(data, length);   // id and body
//   Rpc::Reply(from, request->id, answer_bytes, answer_length);
//   Rpc::Fail(from, request->id, Error::kNotFound);
//
// Wire: a request is the Ebb's own message whose body starts with the u64
// request id (little-endian); a reply goes to (client, kRpcId, handler 1)
// as u64 id, u32 status (fox::Error), then the reply's bytes; a reply longer
// than one message goes as a large message (Messenger::SendLarge). Request
// ids are unique per client node; a reply from a node other than the one
// asked, or for an id no longer pending (timed out), is dropped.
//
// Timeouts are checked every 50 ms by a timer on the Rpc's core (the core
// that first used it), so a timeout fires up to 50 ms late.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "fox/ebb/ebb_ref.h"
#include "fox/ebb/shared_ebb.h"
#include "fox/ebb/static_ids.h"
#include "fox/future.h"
#include "fox/net/am.h"
#include "fox/net/ids.h"
#include "fox/spinlock.h"

namespace fox::ebb {

class Rpc : public SharedEbb<Rpc> {
 public:
  static EbbRef<Rpc> Get() { return EbbRef<Rpc>(kRpcId); }

  using Bytes = std::vector<uint8_t>;
  static constexpr uint64_t kDefaultTimeoutMs = 10'000;
  // Requests up to this long (id included) travel as one message.
  static constexpr size_t kMaxSmallRequest = net::kMaxMessageBytes;

  // Listens for replies on the calling core. Event context; the first
  // dereference of Rpc::Get() on a node constructs it (before am::Start, or
  // at least before the first Call).
  Rpc();
  ~Rpc();
  Rpc(const Rpc&) = delete;
  Rpc& operator=(const Rpc&) = delete;

  // Sends `body` to Ebb `ebb` on `node` under `handler`, prefixed by a fresh
  // request id, and returns the reply. kPeerDead: `node` is dead, or dies
  // before replying; kNotFound: it has not been seen alive (not joined
  // yet); kTimedOut after `timeout_ms` (0: never; death still ends the
  // wait); kOutOfRange: the request is longer than
  // Messenger::kMaxLargeBytes; otherwise the error the server failed the
  // request with. To this node: the same, through
  // the local mailbox. Event context; blocks while the peer's window is full.
  Future<Result<Bytes>> Call(NodeId node, EbbId ebb, HandlerId handler, const void* body, size_t length,
                             uint64_t timeout_ms = kDefaultTimeoutMs);
  // The same with the request in `message`: kRequestHeader bytes of room
  // for the id, then the body (not copied again: a large one is read
  // directly out of it, messenger.h).
  static constexpr size_t kRequestHeader = 8;
  Future<Result<Bytes>> Call(NodeId node, EbbId ebb, HandlerId handler, std::vector<uint8_t> message,
                             uint64_t timeout_ms = kDefaultTimeoutMs);
  // The same with a message the caller shares: the id is written into its
  // header, the rest only read (the caller may read it meanwhile, and call
  // again with it once this call's future is ready).
  Future<Result<Bytes>> Call(NodeId node, EbbId ebb, HandlerId handler, std::shared_ptr<std::vector<uint8_t>> message,
                             uint64_t timeout_ms = kDefaultTimeoutMs);

  struct Request {
    uint64_t id;
    const uint8_t* body;
    size_t length;
  };
  // A request's id and body; nullopt if it is too short to carry an id.
  static std::optional<Request> ParseRequest(const uint8_t* data, size_t length);
  // Answers request `id` from `client` with `length` bytes, or with an
  // error. kPeerDead (the client is dead): nobody waits any more. Event
  // context (blocks while the client's window is full).
  static Result<void> Reply(NodeId client, uint64_t id, const void* data, size_t length);
  // The same with the reply in `message`: kReplyHeader bytes of room for
  // the id and status, then the reply's bytes (not copied again).
  static constexpr size_t kReplyHeader = 12;  // u64 id, u32 status
  static Result<void> Reply(NodeId client, uint64_t id, std::vector<uint8_t> message);
  static Result<void> Fail(NodeId client, uint64_t id, Error error);

  struct Stats {
    uint64_t calls = 0, replies = 0, failures = 0, timeouts = 0, dead = 0, stray_replies = 0;
  };
  Stats stats() const;
  size_t pending() const;

 private:
  struct Pending {
    NodeId node;
    uint64_t deadline_ns;
    Promise<Result<Bytes>> promise;
  };
  void OnReply(NodeId from, const uint8_t* data, size_t length);
  void OnLargeReply(NodeId from, std::vector<uint8_t> data);
  void Complete(uint64_t id, NodeId from, Result<Bytes> result);
  void Sweep();
  void FailNode(NodeId node);
  static Result<void> Send(NodeId client, uint64_t id, Error status, const void* data, size_t length);
  static Result<void> Send(NodeId client, uint64_t id, Error status, std::vector<uint8_t> reply);

  int core_;
  uint64_t subscription_ = 0;
  mutable SpinLock lock_;
  uint64_t next_id_ GUARDED_BY(lock_) = 1;
  std::map<uint64_t, Pending> pending_ GUARDED_BY(lock_);
  bool sweeping_ GUARDED_BY(lock_) = false;
  Stats stats_ GUARDED_BY(lock_);
};

}  // namespace fox::ebb
