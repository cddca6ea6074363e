// One node's end of the active-message transport, as pure logic: the peers
// of the job, a reliable Channel and an aggregation buffer per peer,
// and the job's membership (net::Membership: SWIM failure detection whose
// cost per node does not grow with the job). No sockets, no
// timers, no locks, no clock: time is passed in, datagrams go out through a
// callback, and the driver (net/am.cc on both platforms) owns the lock, the
// timer and the wire. Host unit tests drive it directly.
//
// Sending: Send(peer, ebb, handler, data) appends the message to the peer's
// aggregation buffer (Grappa); the buffer becomes a frame of the reliable
// channel when it is full, when `flush_delay_ns` has passed since its first
// message (Poll), or at once when aggregation is off. kBusy when the peer's
// send window and buffer are both full (backpressure: retry once CanSend).
//
// Senders that cannot wait (receivers replying at interrupt level) use
// SendOrDefer: a message that finds the peer full is copied into the
// endpoint's deferred buffer (allocated up front) and joins the peer's
// aggregation buffer, in order, as the window opens (OnDatagram, Poll).
// Nothing overtakes it: Send to a peer with deferred messages is kBusy.
//
// Receiving: OnDatagram(bytes) decodes and authenticates the frame, feeds
// the peer's channel, and calls `deliver` for each message now in order,
// exactly once. Transport messages (ebb kSystemEbb: membership, death
// notices) are consumed here.
// Messages the handlers send back to the frame's sender during delivery
// (replies) leave at the end of OnDatagram, together in one frame.
//
// Failure: NotifyDead(node) tells every peer a node died (the frontend saw
// its QEMU exit): they believe it at once. Otherwise the membership
// protocol decides (membership.h): Poll runs its timers (one probe of one
// peer per period, indirect probes, suspicions), every authenticated frame
// from a peer is a sign of life, and a suspicion that nobody refuted within
// `membership.suspicion_ns` makes this node NotifyDead the peer. A peer is
// told as kSuspected and then kAlive again (refuted) or kDead. Dead is
// final (fail-stop): the channel is closed, its unacknowledged messages are
// dropped, Send fails with kPeerDead and its later frames are dropped.
//
// Contexts: AddPeer and Poll allocate or free only when peers are added or
// die (Channel::Init / Close); the driver calls them in event context.
// Send, OnDatagram, Flush, CanSend and the accessors never allocate, block
// or throw and are safe at interrupt level. One caller at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "fox/net/am_frame.h"
#include "fox/net/drop_reason.h"
#include "fox/net/function_ref.h"
#include "fox/net/ids.h"
#include "fox/net/membership.h"
#include "fox/net/record_ring.h"
#include "fox/net/reliable.h"
#include "fox/net/siphash.h"
#include "fox/result.h"

namespace fox::net {

// Ebb id 0 is never a real Ebb (ebb/ids start at 1): the transport's own
// messages use it.
inline constexpr EbbId kSystemEbb{0};
// Handler 1 was the heartbeat of fox before the membership protocol; a
// node ignores system messages it does not know.
inline constexpr HandlerId kDeadNoticeHandler{2};  // u32 node id: that node died
inline constexpr HandlerId kMembershipHandler{3};  // a Membership message

struct EndpointConfig {
  uint64_t job = 0;
  SipKey key{};
  NodeId self = 0;
  // Windows and timers; the address is filled per peer. The RTO floor is
  // above how long a busy host deschedules an emulated node (TCG, several
  // nodes per core): below it, make run saw acks arrive after their
  // frames' retransmissions (needless retransmissions, received as
  // duplicates). Losses are mostly repaired by RACK, well before an RTO.
  ChannelConfig channel{.initial_rto_ns = 100'000'000, .min_rto_ns = 20'000'000};
  bool aggregate = true;             // false: one message per frame
  uint64_t flush_delay_ns = 50'000;  // longest a message waits in an aggregation buffer
  // Failure detection (membership.h; `self` and `seed` are the
  // endpoint's). The defaults are for racks; emulated clusters get longer
  // timeouts from their boot arguments (fox.probe_ms, fox.suspect_ms).
  // Off: peers are never probed nor suspected (only notices kill).
  MembershipConfig membership;
  bool detect_failures = true;
  // Fencing: whose word that this node is dead is believed even from a
  // node this one holds dead (after a partition heals, each side holds the
  // other dead; the side without the authority stops). Place 0.
  NodeId authority = 0;
  // SendOrDefer's buffer, shared by all peers (each message takes 16
  // bytes of header plus its data rounded up to 8).
  size_t deferred_bytes = 256 << 10;
};

enum class PeerState : uint8_t { kUnknown, kAlive, kSuspected, kDead };
const char* PeerStateName(PeerState state);

struct EndpointCounters {
  uint64_t messages_sent = 0;       // accepted by Send
  uint64_t messages_delivered = 0;  // passed to `deliver`
  uint64_t frames_flushed = 0;      // aggregation buffers handed to a channel
  uint64_t flush_on_full = 0;       // ...because the next message did not fit
  uint64_t flush_on_timeout = 0;    // ...because flush_delay passed
  uint64_t send_busy = 0;           // Send refused: window and buffer full
  uint64_t deferred = 0;            // SendOrDefer messages that had to wait in the deferred buffer
  uint64_t deferred_full = 0;       // SendOrDefer refused: the deferred buffer was full too
  uint64_t deferred_dropped = 0;    // deferred messages whose peer died before they went out
  uint64_t datagrams_received = 0;
  uint64_t peers_suspected = 0;  // transitions to suspected
  uint64_t peers_dead = 0;
  uint64_t dead_notices_sent = 0;  // "node X died", one per peer told
  uint64_t dead_notices_received = 0;
  uint64_t dead_notices_about_self = 0;  // a peer counts this node out
  uint64_t fences_sent = 0;              // "you are dead" to a peer held dead that still sent
  uint64_t fences_ignored = 0;           // ...received from a peer this node holds dead (not the authority)
  DropCounters drops;                    // datagrams dropped, by reason
};

class AmEndpoint {
 public:
  // `deliver` gets each message in order; `from` is the sending node.
  using DeliverFn = FunctionRef<void(NodeId from, const AmMessage& message)>;
  // Puts a datagram on the wire to the peer's `address` (the driver's
  // token: an IPv4 address and port). Copies the bytes; false when it
  // cannot send now (the frame stays queued in the channel).
  using TransmitFn = FunctionRef<bool(uint64_t address, const uint8_t* frame, size_t len)>;
  // Told about a peer whose state changed (from Poll or DeclareDead).
  using StateFn = FunctionRef<void(NodeId peer, PeerState state)>;

  static constexpr size_t kMaxPeers = 1024;

  explicit AmEndpoint(const EndpointConfig& config);
  ~AmEndpoint();
  AmEndpoint(const AmEndpoint&) = delete;
  AmEndpoint& operator=(const AmEndpoint&) = delete;

  const EndpointConfig& config() const { return config_; }

  // Adds a peer reachable at `address` (normal context: allocates its
  // channel). kAlreadyExists (the address is updated if the peer is alive),
  // kInvalidArgument for ourselves, kNoMemory, kOutOfRange past kMaxPeers.
  // It joins the membership: probed, but not suspected before it has been
  // heard from; dead if never heard from within membership.join_timeout_ns.
  Result<void> AddPeer(NodeId peer, uint64_t address, uint64_t now_ns);

  // Queues one message (see the top). kPeerDead: unknown or dead peer;
  // kOutOfRange: more than kMaxMessageBytes; kBusy: full (retry later).
  Result<void> Send(NodeId peer, EbbId ebb, HandlerId handler, const void* data, size_t len, uint64_t now_ns,
                    TransmitFn transmit);
  // Like Send, but never kBusy while the deferred buffer has room (see the
  // top): the message waits there for the peer's window. kBusy only when
  // that buffer is full as well. Interrupt-safe.
  Result<void> SendOrDefer(NodeId peer, EbbId ebb, HandlerId handler, const void* data, size_t len, uint64_t now_ns,
                           TransmitFn transmit);
  // Whether Send to `peer` would be accepted now for a message of `len`
  // bytes (false while deferred messages to it wait).
  bool CanSend(NodeId peer, size_t len = 0) const;
  // Messages waiting in the deferred buffer (all peers).
  size_t deferred_messages() const { return deferred_count_; }
  // Nothing of ours waits for a live peer: no message in an aggregation
  // buffer or deferred, no death notice owed, no ack owed (a peer waits on
  // it), every frame that carried more than membership messages
  // acknowledged (pings to a peer that ended before us are never answered,
  // and need not be).
  bool Settled() const;

  // Hands every non-empty aggregation buffer to its channel now and
  // transmits (peer kAnyPeer: all of them).
  static constexpr NodeId kAnyPeer = UINT32_MAX;
  void Flush(NodeId peer, uint64_t now_ns, TransmitFn transmit);

  // Whether an authenticated frame from a known peer may go on to its
  // channel; false drops it unacknowledged (kNoReceiverYet), so the peer
  // retransmits it later.
  using AdmitFn = FunctionRef<bool(const FrameView& frame)>;

  // One received datagram from `from_address`. Returns kNone when accepted.
  // A valid frame (the job's key: its MAC checked) from a node that is not
  // a peer, with `from_address` given, is still dropped (kUnknownPeer) but
  // recorded as a join: the driver adds the node (TakeJoins, AddPeer) and
  // its retransmissions get through. A node once declared dead stays a
  // (dead) peer: it cannot join again.
  DropReason OnDatagram(const uint8_t* bytes, size_t len, uint64_t now_ns, DeliverFn deliver, TransmitFn transmit,
                        const AdmitFn* admit = nullptr, uint64_t from_address = 0);
  struct Join {
    NodeId node;
    uint64_t address;
  };
  static constexpr size_t kMaxPendingJoins = 16;
  // The joins recorded since the last call (up to `max`), oldest first.
  size_t TakeJoins(Join* out, size_t max);
  bool joins_pending() const { return join_count_ != 0; }

  // Timers: flushes aggregation buffers that waited flush_delay, runs
  // channel timers and the membership protocol (calling `on_state` for
  // peers that became suspected, alive again, or dead —
  // closing dead peers' channels, which frees memory: normal context when a
  // peer may die). Returns the absolute time to call Poll again.
  uint64_t Poll(uint64_t now_ns, TransmitFn transmit, StateFn on_state);

  // The platform dropped frames for want of a link address it now has:
  // `dropped_before(address)` says, for each peer's address, before when its
  // frames were dropped (0: none were). Those frames not yet acknowledged
  // are retransmitted at the next Poll instead of after their RTO
  // (Channel::ResendDroppedBefore). Returns how many.
  using DroppedBeforeFn = FunctionRef<uint64_t(uint64_t address)>;
  uint32_t ResendDropped(DroppedBeforeFn dropped_before);

  // The frontend says the peer is dead (its QEMU exited). Normal context.
  void DeclareDead(NodeId peer, StateFn on_state, const char* how = "by notice");
  // DeclareDead, and tell every live peer (a system message; a peer whose
  // window is full is told at a later Poll): they declare it dead at their
  // next Poll (notices_pending() says one is due), without waiting for
  // their detectors. Fail-stop: a notice is believed, whoever sends it.
  void NotifyDead(NodeId dead, uint64_t now_ns, TransmitFn transmit, StateFn on_state,
                  const char* how = "by notice, telling the other nodes");
  // What made a dead peer dead, for the log: "own probes" (this node's
  // suspicion expired), "notice" (from peer `from`), "gossip", or the `how`
  // of DeclareDead/NotifyDead; `from` is kAnyPeer but for a notice.
  struct DeadCause {
    const char* how;
    NodeId from;
  };
  DeadCause DeadHow(NodeId peer) const;
  // A death or a change of state the next Poll must make or tell (the
  // driver runs it soon).
  bool notices_pending() const { return notices_pending_ || states_pending_ || (fenced() && !fence_told_); }
  // Fail-stop for the node itself: the job declared it dead (a peer's
  // notice or fence frame, or gossip). A node that still sends to peers
  // that hold it dead gets a fence frame back (at most one per 500 ms per
  // peer), believed from a live peer or from the authority. The next Poll
  // then reports (self, kDead) once: the driver must stop the node, which
  // the others count out and whose data they rebuild elsewhere.
  bool fenced() const { return membership_.declared_dead(); }
  NodeId fenced_by() const { return fenced_by_; }  // kAnyPeer: gossip

  PeerState State(NodeId peer) const;
  // When the peer last gave a sign of life (any authenticated frame; 0:
  // never).
  uint64_t LastHeardNs(NodeId peer) const { return membership_.LastHeardNs(peer); }
  const Membership& membership() const { return membership_; }
  const EndpointCounters& counters() const { return counters_; }
  // The channel to a peer, for its counters and gauges (nullptr: unknown).
  const Channel* ChannelTo(NodeId peer) const;
  size_t peer_count() const { return peer_count_; }
  // Calls fn(peer id) for every peer, in no particular order.
  void ForEachPeer(FunctionRef<void(NodeId)> fn) const;

 private:
  struct Peer;
  Peer* Find(NodeId peer) const;
  bool FlushPeer(Peer& p, uint64_t now_ns, TransmitFn transmit);
  bool SendSystem(Peer& p, HandlerId handler, const void* data, size_t len, uint64_t now_ns, TransmitFn transmit);
  void OnDeadNotice(NodeId dead, NodeId from);
  void Fence(NodeId by);
  void SendFence(Peer& p, uint64_t now_ns, TransmitFn transmit);
  Result<void> SendNow(Peer& p, EbbId ebb, HandlerId handler, const void* data, size_t len, uint64_t now_ns,
                       TransmitFn transmit);
  bool Defer(Peer& p, EbbId ebb, HandlerId handler, const void* data, size_t len);
  void DrainDeferred(uint64_t now_ns, TransmitFn transmit);
  void Kill(Peer& p, StateFn on_state);
  bool SendMembership(NodeId to, const uint8_t* message, size_t len, uint64_t now_ns, TransmitFn transmit);
  void OnMemberState(NodeId member, MemberState state);
  void KillNoticed(StateFn on_state);
  void TellStates(StateFn on_state);
  uint64_t PollPeer(Peer& p, uint64_t now_ns, TransmitFn transmit);

  EndpointConfig config_;
  Peer* slots_[kMaxPeers * 2] = {};  // open addressing by node id
  size_t peer_count_ = 0;
  EndpointCounters counters_;
  Join joins_[kMaxPendingJoins] = {};
  size_t join_count_ = 0;
  RecordRing deferred_;        // the deferred buffer (am_endpoint.cc)
  size_t deferred_count_ = 0;  // records not yet sent
  size_t peers_with_deferred_ = 0;
  uint64_t drain_pass_ = 0;
  bool notices_pending_ = false;  // a peer was noticed dead; Poll kills it
  bool fence_told_ = false;
  NodeId fenced_by_ = kAnyPeer;
  Membership membership_;
  uint64_t membership_due_ = 0;  // when Poll next runs its timers
  bool states_pending_ = false;  // suspicions or refutations Poll has not told yet
};

}  // namespace fox::net
