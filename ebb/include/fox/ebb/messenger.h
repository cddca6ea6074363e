// Messenger: messages between Ebbs on different machines (EbbRT's Messenger
// Ebb), a shared system Ebb at the static id kMessengerId over the
// active-message transport (fox/net/am.h). A message is addressed to a node
// and an Ebb id, with a handler id the Ebb defines (fox/net/ids.h); on the receiving
// node the Ebb's Listener gets it. The same code runs on compute nodes and in
// Linux programs (native <-> hosted traffic is just traffic).
//
//   auto m = Messenger::Get();
//   m->Listen(my_id, [](NodeId from, HandlerId h, const uint8_t* d, size_t n) {...});
//   m->SendWait(node, peer_id, kMyHandler, &req, sizeof req);
//
// Listen's handlers run as events on a core of the listener's choice (the
// per-core receive mailboxes of fox/net/am.h); ListenInDelivery's Receiver
// runs in delivery context (interrupt level natively) for what must not
// wait for an event (writes into SAS segments, counters). Requests that
// expect a reply go through the Rpc Ebb (fox/ebb/rpc.h).
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
//
// Direct large messages (messenger_direct.cc): between hosted places on one
// Linux host, a large message of kDirectMinBytes or more travels as the
// address of its bytes, which the receiver copies out of the sender's
// memory (fox/peer_memory.h), as MPI's shared-memory transport does: one
// message and one copy instead of a fragment per 1.4 KB. The sender keeps
// the bytes until the receiver says it has them (or dies). A sender asks
// each peer once whether it can read it (a probe, as soon as the peer is
// alive: the peer reads a number the probe names at the address it
// gives); until a peer says yes, and
// with every peer that says no (nodes, other hosts, Linux refusing,
// fox.direct=off at either end), messages go as fragments. Order holds
// either way: both travel on the pair's one ordered channel and are
// delivered in the Messenger's listener in arrival order.
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
#include "fox/core.h"
#include "fox/future.h"
#include "fox/net/am.h"
#include "fox/peer_memory.h"
#include "fox/spinlock.h"

namespace fox::ebb {

class Messenger : public SharedEbb<Messenger> {
 public:
  static EbbRef<Messenger> Get() { return EbbRef<Messenger>(kMessengerId); }

  // A whole message at most this long; all unfinished ones on a node at most
  // kMaxPartialBytes together.
  static constexpr size_t kMaxLargeBytes = size_t(64) << 20;
  static constexpr size_t kMaxPartialBytes = size_t(256) << 20;
  // Direct large messages from this size on; a sender keeps at most
  // kMaxPartialBytes of them unread (then it sends fragments).
  static constexpr size_t kDirectMinBytes = size_t(16) << 10;
  using LargeHandler = Function<void(NodeId from, HandlerId handler, std::vector<uint8_t> data)>;
  // Bytes a sender shares with what else holds them (read, never written,
  // while the message is on its way).
  using Shared = std::shared_ptr<const std::vector<uint8_t>>;

  // Listens for fragments and status requests on the calling core (event
  // context; the first dereference of Messenger::Get() on a node
  // constructs it: do that before am::Start, as any receiver).
  Messenger();
  ~Messenger();
  Messenger(const Messenger&) = delete;
  Messenger& operator=(const Messenger&) = delete;

  // This node's id in the job.
  NodeId Self() const { return am::Self(); }
  // Messages for Ebb `id` on this node run `handler` as events on `core`
  // (-1: the calling core), each exactly once, in arrival order (am::Listen).
  // kInvalidArgument for the null id, kAlreadyExists, kOutOfRange (core).
  Result<void> Listen(EbbId id, am::Handler handler, int core = -1) {
    if (id == kNullId) return Error::kInvalidArgument;
    return am::Listen(id, core < 0 ? core::Current() : core, std::move(handler));
  }
  // Messages for Ebb `id` go to `receiver` in delivery context (am::Register).
  Result<void> ListenInDelivery(EbbId id, am::Receiver* receiver) {
    return id == kNullId ? Result<void>(Error::kInvalidArgument) : am::Register(id, receiver);
  }
  void StopListening(EbbId id) { am::Unregister(id); }
  // Queues a message for Ebb `id` on `node` (kBusy: full, retry).
  Result<void> Send(NodeId node, EbbId id, HandlerId handler, const void* data, size_t length) {
    return am::Send(node, id, handler, data, length);
  }
  // For listeners replying in delivery context: a message that finds the
  // peer full waits in the transport's deferred buffer (kBusy only when
  // that is full too).
  Result<void> SendOrDefer(NodeId node, EbbId id, HandlerId handler, const void* data, size_t length) {
    return am::SendOrDefer(node, id, handler, data, length);
  }
  // The same as Send, blocking the calling event while the peer is full.
  Result<void> SendWait(NodeId node, EbbId id, HandlerId handler, const void* data, size_t length) {
    return am::SendWait(node, id, handler, data, length);
  }
  void Flush(NodeId node) { am::Flush(node); }

  // Large messages for Ebb `id` on this node go to `handler` (one per id),
  // as events on `core` (-1: the calling core), in the order their last
  // fragments arrived (a sending event's messages stay in its order).
  // kInvalidArgument for the null id, kAlreadyExists, kOutOfRange (core).
  // Any context but delivery.
  Result<void> ListenLarge(EbbId id, LargeHandler handler, int core = -1);
  void StopListeningLarge(EbbId id);
  // Listen and ListenLarge with one handler, for protocols whose messages
  // may be either (a large one reaches it as data and length too).
  Result<void> ListenAny(EbbId id, am::Handler handler, int core = -1);
  // ListenAny handing the bytes over (a large message's as they arrived,
  // a small one's copied), for listeners that keep them.
  Result<void> ListenAnyOwned(EbbId id, LargeHandler handler, int core = -1);
  void StopListeningAny(EbbId id) {
    StopListening(id);
    StopListeningLarge(id);
  }
  // SendWait and Flush when the message fits in one, else SendLarge. Event
  // context; blocks while the peer's window is full.
  Result<void> SendAny(NodeId node, EbbId id, HandlerId handler, const void* data, size_t length);
  // Asks every live peer not asked yet whether it can read this node's
  // memory (direct large messages; a peer that becomes alive later is
  // asked then), so that the first large message to it need not go as
  // fragments. Nothing natively. Event context.
  void ProbePeers();
  // SendAny taking the bytes (no copy for a direct large message).
  Result<void> SendAny(NodeId node, EbbId id, HandlerId handler, std::vector<uint8_t> bytes);
  // SendAny of shared bytes (kept, not copied, until a direct large
  // message is read; the caller may keep reading them meanwhile).
  Result<void> SendAny(NodeId node, EbbId id, HandlerId handler, Shared bytes);
  // Sends `length` (<= kMaxLargeBytes) bytes to Ebb `id` on `node`, blocking
  // the calling event while the peer's window is full. kOutOfRange (too
  // long), kPeerDead (unknown or dead node), kInvalidArgument (null id). To
  // this node: handed to the handler as an event, copied. Event context.
  Result<void> SendLarge(NodeId node, EbbId id, HandlerId handler, const void* data, size_t length);
  // SendLarge taking the bytes (kept for the receiver to read when direct).
  Result<void> SendLarge(NodeId node, EbbId id, HandlerId handler, std::vector<uint8_t> bytes);
  Result<void> SendLarge(NodeId node, EbbId id, HandlerId handler, Shared bytes);

  // A text report of `node`'s state, one "key value" line each: node,
  // platform, cores, uptime, per-core event counters, transport counters
  // and drops by reason, peers with their state and silence, large-message
  // counters (what `fox status` shows). kPeerDead if the node is dead or
  // dies first, kNotFound if it was never seen alive, kTimedOut after
  // `timeout_ms`. The node answers from its Messenger (every node that
  // messages Ebbs has one), through Rpc. Event context.
  Future<Result<std::string>> QueryStatus(NodeId node, uint64_t timeout_ms = 10'000);
  // This node's report.
  std::string LocalStatus() const;
  // Layers above add their lines to every report: `source(context, &out)`
  // appends "key value\n" lines (keys "layer.name", values numbers) and
  // must not call back into the Messenger. At most kMaxStatusSources;
  // kOutOfRange beyond. Remove before `context` goes: a report that
  // runs it is over when RemoveStatusSource returns.
  using StatusSource = void (*)(const void* context, std::string* out);
  static constexpr size_t kMaxStatusSources = 8;
  Result<void> AddStatusSource(StatusSource source, const void* context);
  void RemoveStatusSource(StatusSource source, const void* context);

  // Bytes of direct large messages sent from here that their receivers
  // have not read yet (they go with this node's memory if it ends now).
  size_t UnreadDirectBytes() const {
    SpinGuard g(lock_);
    return outgoing_bytes_;
  }

  struct LargeStats {
    uint64_t sent = 0, received = 0;                // whole messages
    uint64_t direct_sent = 0, direct_received = 0;  // of those, read from the sender's memory
    uint64_t probes_refused = 0;                    // peers that cannot read this node's memory
    uint64_t no_handler = 0;                        // received for an Ebb id without a large handler
    uint64_t dropped = 0;                           // malformed, over the limits, or from a node that died
  };
  LargeStats large_stats() const;

 private:
  struct LargeListener {
    int core;
    std::shared_ptr<LargeHandler> handler;
  };
  void Deliver(NodeId from, EbbId id, HandlerId handler, std::vector<uint8_t> data);
  void OnMessage(NodeId from, HandlerId handler, const uint8_t* data, size_t length);
  void ReportToFrontend();
  void AnswerStatus(NodeId from, const uint8_t* data, size_t length);
  // Handlers of the Ebb kMessengerId.
  enum Handler : uint16_t {
    kFragment = 1,
    kStatusRequest = 2,  // an Rpc request with an empty body; the report is the reply
    kDirectProbe = 3,    // u64 nonce, u64 pid, u64 address of the nonce
    kDirectAnswer = 4,   // u64 nonce, u64 1 (read it) or 0
    kDirectMessage = 5,  // u64 id, u32 Ebb, u16 handler, u16 0, u64 length, u64 address
    kDirectDone = 6,     // u64 id: read (or dropped); the sender frees it
  };

  void Dropped(NodeId from, const char* why);
  Result<void> SendFragments(NodeId node, EbbId id, HandlerId handler, const uint8_t* bytes, size_t length);

  // Direct large messages (messenger_direct.cc).
  enum class Direct : uint8_t { kUnknown, kProbing, kYes, kNo };
  struct DirectPeer {  // a peer this node sends to
    Direct state = Direct::kUnknown;
    uint64_t nonce = 0;  // what its probe reads here (at this field's address)
  };
  // Sends bytes [data, data + length) (kept in *shared if it is not null,
  // else copied) directly if `node` can read this node, setting *sent;
  // else leaves *sent false (and probes `node` the first time).
  Result<void> SendDirect(NodeId node, EbbId id, HandlerId handler, const uint8_t* data, size_t length,
                          const Shared* shared, bool* sent);
  void OnProbe(NodeId from, const uint8_t* data, size_t length);
  void OnProbeAnswer(NodeId from, const uint8_t* data, size_t length);
  void OnDirect(NodeId from, const uint8_t* data, size_t length);
  void OnDirectDone(NodeId from, const uint8_t* data, size_t length);
  void ForgetDirect(NodeId dead);
  bool StartProbeLocked(NodeId node, uint8_t* probe) REQUIRES(lock_);
  void ProbeEarly(NodeId node);
  static bool DirectEnabled();

  int core_;
  uint64_t subscription_ = 0;
  std::atomic<uint64_t> next_message_{1};
  mutable SpinLock lock_;
  std::map<EbbId, LargeListener> handlers_ GUARDED_BY(lock_);
  LargeStats stats_ GUARDED_BY(lock_);
  // Touched only by events on core_ (the fragment listener and the
  // peer-state callback both run there).
  Reassembler reassembler_;
  std::map<NodeId, peer_memory::Peer> direct_from_;  // peers whose memory this node reads
  bool direct_enabled_;                              // fox.direct (on by default where possible)
  // Direct sending (any core).
  std::map<NodeId, DirectPeer> direct_to_ GUARDED_BY(lock_);
  struct Outgoing {
    NodeId node;
    Shared bytes;
    size_t length;
  };
  std::map<uint64_t, Outgoing> outgoing_ GUARDED_BY(lock_);  // by message id, until read
  size_t outgoing_bytes_ GUARDED_BY(lock_) = 0;
  uint64_t last_warning_ns_ = 0;
  std::atomic<bool> reporting_{false};  // ReportToFrontend runs
  struct Source {
    StatusSource source;
    const void* context;
  };
  mutable SpinLock sources_lock_;  // held while a report runs the sources
  std::vector<Source> sources_ GUARDED_BY(sources_lock_);
};

}  // namespace fox::ebb
