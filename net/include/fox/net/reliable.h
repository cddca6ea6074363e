// The reliable channel: reliable, ordered, exactly-once delivery of AM frames
// to one peer over a datagram service that loses, duplicates and reorders.
//
// One Channel per (job, peer) pair, for the life of the job. There is no
// handshake: both ends start from configured sequence numbers, which is sound
// because a node id is never reused within a job (a dead node stays dead) and
// frames of other jobs fail the job-id and MAC checks. The design (sequence
// numbers, cumulative and selective acks, RTO and RACK-style loss detection)
// is described at the top of reliable.cc.
//
// Driving it (no threads, no clock of its own; time is passed in):
//   Send(builder)       queue a frame of messages (copied; kBusy when the window is full)
//   OnReceive(view,...) hand it every decoded frame from the peer; in-order frames are
//                       passed to `deliver`, each exactly once and in sequence order
//   Poll(now, transmit) emits new frames, retransmissions and standalone acks through
//                       `transmit`, and returns the time by which to Poll again
// Call Poll after Send and after OnReceive (acks may have become due), and
// when its deadline passes.
//
// Contexts and locking: a Channel is single-threaded; the caller serializes
// every call on one channel (e.g. one kernel core owns it, or a lock around
// it). Init allocates its buffers and Close frees them: call those in normal
// context. Send, OnReceive, Poll, NextDeadline, CanSend and the accessors
// never allocate, block or throw, and are safe in interrupt context.
//
// Memory: Init allocates send_window slots of 1504 bytes and recv_window
// slots of 1536 bytes (a frame plus bookkeeping): 380 KiB per channel with
// the default windows of 128.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fox/net/am_frame.h"
#include "fox/net/drop_reason.h"
#include "fox/net/function_ref.h"
#include "fox/net/siphash.h"
#include "fox/result.h"

namespace fox::net {

inline constexpr uint64_t kNoDeadline = UINT64_MAX;
inline constexpr uint32_t kMaxWindow = 1024;
// Frames older than this (behind the next expected one) are kStale rather
// than kDuplicate: no retransmission can be that old.
inline constexpr uint32_t kDuplicateHorizon = 4 * kMaxWindow;

struct ChannelConfig {
  FrameAddress address;                  // job, this node (source), the peer (destination)
  SipKey key;                            // the job key
  uint32_t send_window = 128;            // frames in flight, 1..kMaxWindow
  uint32_t recv_window = 128;            // frames accepted from the next expected on, 1..kMaxWindow;
                                         // advertised to the peer. Keep it >= the peer's send_window.
  uint32_t initial_send_seq = 0;         // must equal the peer's initial_recv_seq
  uint32_t initial_recv_seq = 0;         // must equal the peer's initial_send_seq
  uint64_t initial_rto_ns = 20'000'000;  // before the first RTT sample
  uint64_t min_rto_ns = 5'000'000;
  uint64_t max_rto_ns = 1'000'000'000;  // cap of the exponential backoff
  uint64_t ack_delay_ns = 1'000'000;    // longest an ack waits for a frame to ride on
  uint32_t ack_every = 8;               // ...or for this many frames received
};

// What a user or operator asks about (STYLE.md §12). Monotonic counts.
struct ChannelCounters {
  // Sending.
  uint64_t frames_sent = 0;           // first transmissions of data frames
  uint64_t frames_retransmitted = 0;  // retransmissions, for any reason
  uint64_t timeouts = 0;              // frames whose retransmission timer expired
  uint64_t fast_retransmits = 0;      // frames found lost because later ones arrived
  uint64_t resent_dropped = 0;        // frames the platform had dropped, resent (ResendDroppedBefore)
  uint64_t spurious_retransmits = 0;  // retransmissions found needless (reordering)
  uint64_t frames_acked = 0;          // frames acknowledged (cumulatively)
  uint64_t send_busy = 0;             // Send refused: window full
  uint64_t acks_sent = 0;             // standalone ack frames transmitted
  uint64_t transmit_refused = 0;      // the transmit callback returned false
  uint64_t stale_acks = 0;            // acks behind what was already acknowledged
  uint64_t bad_acks = 0;              // acks of frames never transmitted (ignored)
  // Receiving.
  uint64_t frames_received = 0;   // new data frames accepted
  uint64_t frames_buffered = 0;   // ...of which out of order
  uint64_t frames_delivered = 0;  // frames passed to `deliver`
  uint64_t acks_received = 0;     // ack-only frames
  uint64_t duplicates = 0;        // kDuplicate drops
  uint64_t stale = 0;             // kStale drops
  uint64_t out_of_window = 0;     // kOutOfWindow drops
  uint64_t wrong_source = 0;      // kWrongSource (and wrong job or destination) drops
  uint64_t rejected_closed = 0;   // kPeerClosed drops
  uint64_t dropped_on_close = 0;  // unacknowledged and buffered frames discarded by Close
};

class Channel {
 public:
  // Called with each frame delivered in order. The view is valid during the
  // call only. It may call Send, CanSend, Poll, NextDeadline and Close on this
  // channel, but not OnReceive.
  using DeliverFn = FunctionRef<void(const FrameView& frame)>;
  // Called with each frame to put on the wire; must copy the bytes (they are
  // valid during the call only). Returns false if it cannot send now (e.g. the
  // NIC's ring is full): the frame stays pending and Poll stops. It may not
  // call into the channel.
  using TransmitFn = FunctionRef<bool(const uint8_t* frame, size_t len)>;

  Channel() = default;
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  // Allocates the buffers. kInvalidArgument for a bad configuration (a window
  // of 0 or above kMaxWindow, ack_every 0, min_rto > max_rto, source equal to
  // destination), kNoMemory, kAlreadyExists if called twice. Normal context.
  Result<void> Init(const ChannelConfig& config);

  // True when Send would accept a frame now.
  bool CanSend() const;

  // Copies the messages of `frame` (its header is not used; the channel seals
  // its own) into the send window and returns the sequence number it gets;
  // Poll transmits it. kBusy when the window is full (flow control: wait for
  // acks, CanSend() turns true), kInvalidArgument for an empty builder or one
  // addressed elsewhere, kPeerDead once the channel is closed (peer dead).
  Result<uint32_t> Send(const FrameBuilder& frame);

  // Processes one frame from the peer, decoded with this channel's job and
  // node: takes its acks, and delivers in-order data through `deliver`
  // (draining frames buffered behind it). Out-of-order frames within the
  // receive window are copied and held. Returns kNone when accepted, or why it
  // was dropped (kWrongSource, kWrongJob, kWrongDestination, kPeerClosed,
  // kDuplicate, kStale, kOutOfWindow). Never allocates; interrupt-safe.
  DropReason OnReceive(const FrameView& frame, uint64_t now_ns, DeliverFn deliver);

  // Marks frames whose timers expired as lost, transmits every frame that is
  // due (new, lost) in sequence order within the window, then a standalone
  // ack if one is due and none rode on a data frame. Returns the absolute time
  // at which Poll has work again (0 if it has now: a transmit was refused),
  // kNoDeadline if none. Never allocates; interrupt-safe.
  uint64_t Poll(uint64_t now_ns, TransmitFn transmit);

  // The frames transmitted before `before_ns` never reached the wire (the
  // platform dropped them for want of the peer's link address, which it has
  // now): marks those not yet acknowledged lost, so that the next Poll
  // retransmits them at once instead of after their RTO. Returns how many.
  // Interrupt-safe.
  uint32_t ResendDroppedBefore(uint64_t before_ns);

  // What Poll would return, without doing anything: 0 when frames are waiting
  // to be transmitted, else the earliest timer, or kNoDeadline.
  uint64_t NextDeadline() const;

  // The peer is dead: discards every unacknowledged and buffered frame
  // (counted in dropped_on_close), frees the buffers, and from now on Send
  // fails with kPeerDead, OnReceive drops with kPeerClosed and Poll does
  // nothing. Irreversible. Normal context (it frees memory).
  void Close();

  bool open() const { return state_ == State::kOpen; }
  bool closed() const { return state_ == State::kClosed; }
  // Nothing unacknowledged and no ack owed.
  bool idle() const { return in_flight() == 0 && !ack_pending_; }
  bool ack_pending() const { return ack_pending_; }           // an ack owed to the peer, not sent yet
  uint32_t in_flight() const { return snd_nxt_ - snd_una_; }  // queued or unacknowledged
  uint32_t window() const;                                    // frames allowed in flight now
  uint32_t next_send_seq() const { return snd_nxt_; }
  uint32_t next_expected_seq() const { return rcv_nxt_; }
  uint32_t buffered() const { return buffered_; }  // out-of-order frames held
  uint64_t srtt_ns() const { return srtt_ns_; }    // 0 before the first sample
  uint64_t rto_ns() const;                         // with the current backoff
  uint32_t backoff() const { return backoff_; }    // timeouts in a row without progress
  const ChannelCounters& counters() const { return counters_; }
  const ChannelConfig& config() const { return config_; }

 private:
  enum class State : uint8_t { kUninitialized, kOpen, kClosed };
  struct SendSlot;
  struct RecvSlot;

  SendSlot& SendAt(uint32_t offset) const;  // offset from snd_una_
  RecvSlot& RecvAt(uint32_t offset) const;  // offset from rcv_nxt_
  void ProcessAck(const FrameHeader& h, uint64_t now_ns);
  void NoteDelivered(SendSlot& s, uint64_t now_ns, uint64_t* sample_order, uint64_t* sample_ns);
  void UpdateRtt(uint64_t sample_ns);
  void DetectLosses(uint64_t now_ns);
  bool MarkLosses(uint64_t now_ns);
  uint64_t ReorderDelay() const;
  uint64_t SackBits() const;
  void AckAt(uint64_t due_ns);
  void CountReceived(uint32_t frames, bool immediate, uint64_t now_ns);
  void AckSent();
  bool TransmitData(uint32_t offset, uint64_t now_ns, TransmitFn& transmit);
  bool TransmitAck(TransmitFn& transmit);
  void FreeStorage();

  ChannelConfig config_;
  State state_ = State::kUninitialized;
  bool delivering_ = false;  // inside OnReceive's delivery loop: Close defers freeing

  // Sender. Slot of offset k (sequence snd_una_ + k) is send_[(send_head_ + k) % send_window].
  SendSlot* send_ = nullptr;
  uint32_t send_head_ = 0;
  uint32_t snd_una_ = 0;      // oldest unacknowledged
  uint32_t snd_nxt_ = 0;      // next to assign
  uint32_t peer_window_ = 0;  // as advertised by the peer's latest ack
  uint64_t tx_order_ = 0;     // transmissions so far; orders them (RACK)
  uint64_t rack_order_ = 0;   // order of the latest-sent frame known delivered
  uint64_t srtt_ns_ = 0;
  uint64_t rttvar_ns_ = 0;
  uint64_t min_rtt_ns_ = UINT64_MAX;
  uint64_t rto_base_ns_ = 0;  // RTO before backoff
  uint32_t backoff_ = 0;
  uint32_t reorder_mult_ = 1;  // reordering allowance, in SRTT/4
  uint32_t fast_since_spurious_ = 0;

  // Receiver. Slot of offset k (sequence rcv_nxt_ + k) is recv_[(recv_head_ + k) % recv_window].
  RecvSlot* recv_ = nullptr;
  uint32_t recv_head_ = 0;
  uint32_t rcv_nxt_ = 0;  // next expected
  uint32_t buffered_ = 0;
  bool ack_pending_ = false;
  uint64_t ack_due_ns_ = 0;
  uint32_t unacked_received_ = 0;  // data frames received since the last ack sent
  alignas(8) uint8_t ack_frame_[kHeaderBytes] = {};

  ChannelCounters counters_;
};

}  // namespace fox::net
