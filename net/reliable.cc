// The reliable channel's state machine.
//
// Design. Each direction of a node pair is a stream of frames numbered with
// 32-bit sequence numbers (wrap-around safe, sequence.h). Every frame the
// channel transmits — data or standalone ack — carries the receiver state of
// its reverse direction: the cumulative ack (next sequence expected), a 64-bit
// selective-ack bitmap of the frames held out of order after it, and the
// receive window. Standalone acks have no sequence number of their own and
// are never acknowledged.
//
// Sender. Frames are copied into a ring of send_window slots at Send and stay
// there until cumulatively acknowledged (the receiver never discards a frame
// it has selectively acknowledged, but keeping them costs nothing: the ring is
// sized for the window anyway). At most min(send_window, peer window) frames
// are in flight; beyond that Send returns kBusy. A frame is retransmitted when
// it is found lost, in one of two ways:
//   - Timeout: each frame has a timer at its last transmission + RTO. The RTO
//     is computed as in RFC 6298 (SRTT, RTTVAR, RTO = SRTT + 4 RTTVAR, clamped
//     to [min_rto, max_rto]) from samples taken only on frames transmitted
//     once (Karn). When the oldest outstanding frame times out the RTO
//     doubles (up to max_rto) until an ack makes progress.
//   - Fast retransmission (RACK, RFC 8985, simplified): when a frame sent
//     after frame F is acknowledged (cumulatively or selectively) and F is
//     not, F is deemed lost once SRTT plus a reordering allowance has passed
//     since F was sent. Transmissions are ordered by a counter rather than by
//     time, so frames sent in the same instant are still ordered. The
//     allowance starts at SRTT/4 and widens, up to SRTT, each time a
//     retransmission proves spurious (its ack came back faster than any
//     round trip could: the original was only late); it narrows again after
//     16 fast retransmissions.
// Retransmissions carry kFlagRetransmit and kFlagAckNow, as does the frame
// that fills the window, so that the ack which moves the window is not
// delayed.
//
// Receiver. Frame rcv_nxt is delivered at once, from the caller's buffer (no
// copy), followed by any frames it unblocks. Frames in (rcv_nxt, rcv_nxt +
// recv_window) are copied into a ring of recv_window slots. Anything before
// rcv_nxt is a duplicate (dropped, and re-acked at once so that a sender whose
// ack was lost stops retransmitting), unless it is further back than any
// retransmission could be (kStale, not re-acked); anything at or beyond the
// window is dropped (kOutOfWindow, re-acked so that the sender learns the
// window). In-order frames are acked after ack_delay or every ack_every
// frames; out-of-order frames, duplicates, frames that fill a hole and frames
// marked kFlagAckNow are acked at the next Poll. A data frame transmitted
// before the ack is due carries it instead.
//
// Exactly once: a frame is delivered only when its sequence number equals
// rcv_nxt, which then advances, so each sequence number is delivered once;
// the windows keep every accepted sequence number within 2^31 of rcv_nxt, so
// wrap-around comparisons are exact. Frames are authenticated (MAC) before
// they get here, so sequence numbers cannot be forged.
#include "fox/net/reliable.h"

#include <cstring>
#include <new>

#include "sequence.h"  // internal: only the channel compares sequence numbers

namespace fox::net {

struct Channel::SendSlot {
  uint64_t last_tx_ns = 0;
  uint64_t tx_order = 0;       // tx_order_ at the last transmission
  uint32_t transmissions = 0;  // 0: not sent yet
  uint16_t payload_length = 0;
  uint16_t message_count = 0;
  bool sacked = false;  // selectively acknowledged
  bool lost = false;    // due for retransmission
  alignas(8) uint8_t frame[kMaxFrameBytes];
};

struct Channel::RecvSlot {
  bool used = false;
  FrameHeader header;
  alignas(8) uint8_t frame[kMaxFrameBytes];
};

namespace {

constexpr uint32_t kMaxBackoff = 16;
constexpr uint32_t kMaxReorderMult = 4;  // allowance of at most SRTT
constexpr uint32_t kReorderDecay = 16;   // fast retransmissions before narrowing again

constexpr uint64_t AddSat(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
constexpr uint64_t Min(uint64_t a, uint64_t b) { return a < b ? a : b; }
constexpr uint64_t Max(uint64_t a, uint64_t b) { return a > b ? a : b; }

}  // namespace

Channel::~Channel() { FreeStorage(); }

void Channel::FreeStorage() {
  delete[] send_;
  delete[] recv_;
  send_ = nullptr;
  recv_ = nullptr;
}

Result<void> Channel::Init(const ChannelConfig& config) {
  if (state_ != State::kUninitialized) return Error::kAlreadyExists;
  if (config.send_window == 0 || config.send_window > kMaxWindow || config.recv_window == 0 ||
      config.recv_window > kMaxWindow || config.ack_every == 0 || config.min_rto_ns == 0 ||
      config.min_rto_ns > config.max_rto_ns || config.address.source == config.address.destination) {
    return Error::kInvalidArgument;
  }
  send_ = new (std::nothrow) SendSlot[config.send_window];
  recv_ = new (std::nothrow) RecvSlot[config.recv_window];
  if (send_ == nullptr || recv_ == nullptr) {
    FreeStorage();
    return Error::kNoMemory;
  }
  config_ = config;
  snd_una_ = snd_nxt_ = config.initial_send_seq;
  rcv_nxt_ = config.initial_recv_seq;
  peer_window_ = config.send_window;  // until the peer says otherwise
  rto_base_ns_ = Max(config.min_rto_ns, Min(config.initial_rto_ns, config.max_rto_ns));
  state_ = State::kOpen;
  return Ok();
}

Channel::SendSlot& Channel::SendAt(uint32_t offset) const { return send_[(send_head_ + offset) % config_.send_window]; }

Channel::RecvSlot& Channel::RecvAt(uint32_t offset) const { return recv_[(recv_head_ + offset) % config_.recv_window]; }

uint32_t Channel::window() const { return peer_window_ < config_.send_window ? peer_window_ : config_.send_window; }

uint64_t Channel::rto_ns() const { return Min(rto_base_ns_ << backoff_, config_.max_rto_ns); }

bool Channel::CanSend() const { return state_ == State::kOpen && in_flight() < window(); }

Result<uint32_t> Channel::Send(const FrameBuilder& frame) {
  if (state_ != State::kOpen) return Error::kPeerDead;
  if (frame.empty() || !(frame.address() == config_.address)) return Error::kInvalidArgument;
  if (in_flight() >= window()) {
    ++counters_.send_busy;
    return Error::kBusy;
  }
  SendSlot& s = SendAt(in_flight());
  s.transmissions = 0;
  s.sacked = false;
  s.lost = false;
  s.payload_length = static_cast<uint16_t>(frame.payload_bytes());
  s.message_count = static_cast<uint16_t>(frame.message_count());
  std::memcpy(s.frame + kHeaderBytes, frame.payload(), frame.payload_bytes());
  return snd_nxt_++;
}

// ---- Acknowledgements received -------------------------------------------

void Channel::ProcessAck(const FrameHeader& h, uint64_t now_ns) {
  int32_t advance = SeqDiff(h.ack, snd_una_);
  if (advance < 0) {
    ++counters_.stale_acks;  // overtaken by a newer ack
    return;
  }
  if (static_cast<uint32_t>(advance) > in_flight() || (advance > 0 && SendAt(advance - 1).transmissions == 0)) {
    ++counters_.bad_acks;  // acknowledges frames never transmitted
    return;
  }
  peer_window_ = h.window == 0 ? 1 : (h.window > kMaxWindow ? kMaxWindow : h.window);

  uint64_t sample_order = 0;
  uint64_t sample_ns = 0;
  for (int32_t i = 0; i < advance; ++i) {
    SendSlot& s = SendAt(0);
    if (!s.sacked) NoteDelivered(s, now_ns, &sample_order, &sample_ns);
    send_head_ = (send_head_ + 1) % config_.send_window;
    ++snd_una_;
    ++counters_.frames_acked;
  }
  if (advance > 0) backoff_ = 0;

  // Bit i: frame ack + 1 + i, which is now offset 1 + i from snd_una_.
  for (uint64_t bits = h.sack; bits != 0; bits &= bits - 1) {
    uint32_t offset = 1 + static_cast<uint32_t>(__builtin_ctzll(bits));
    if (offset >= in_flight()) break;
    SendSlot& s = SendAt(offset);
    if (s.transmissions == 0) {
      ++counters_.bad_acks;
      break;
    }
    if (!s.sacked) {
      s.sacked = true;
      s.lost = false;
      NoteDelivered(s, now_ns, &sample_order, &sample_ns);
    }
  }
  if (sample_order != 0) UpdateRtt(sample_ns);
  DetectLosses(now_ns);
}

// Frame `s` is known to have arrived: it may advance RACK's notion of the
// latest delivered transmission, and give an RTT sample.
void Channel::NoteDelivered(SendSlot& s, uint64_t now_ns, uint64_t* sample_order, uint64_t* sample_ns) {
  if (now_ns < s.last_tx_ns) return;  // the caller's clock went backwards
  uint64_t elapsed = now_ns - s.last_tx_ns;
  // For a retransmitted frame the ack may be for an earlier transmission; an
  // ack faster than any RTT seen must be: the retransmission was spurious
  // (the original was only reordered), so allow more reordering from now on.
  bool ambiguous = s.transmissions > 1 && elapsed < min_rtt_ns_;
  if (ambiguous && min_rtt_ns_ != UINT64_MAX) {
    ++counters_.spurious_retransmits;
    if (reorder_mult_ < kMaxReorderMult) ++reorder_mult_;
    fast_since_spurious_ = 0;
  }
  if (s.tx_order > rack_order_ && !ambiguous) rack_order_ = s.tx_order;
  if (s.transmissions == 1 && s.tx_order > *sample_order) {
    *sample_order = s.tx_order;
    *sample_ns = elapsed;
  }
}

void Channel::UpdateRtt(uint64_t sample_ns) {
  if (srtt_ns_ == 0) {
    srtt_ns_ = Max(sample_ns, 1);
    rttvar_ns_ = sample_ns / 2;
  } else {
    uint64_t err = srtt_ns_ > sample_ns ? srtt_ns_ - sample_ns : sample_ns - srtt_ns_;
    rttvar_ns_ = (3 * rttvar_ns_ + err) / 4;
    srtt_ns_ = Max((7 * srtt_ns_ + sample_ns) / 8, 1);
  }
  min_rtt_ns_ = Min(min_rtt_ns_, sample_ns);
  uint64_t rto = srtt_ns_ + Max(4 * rttvar_ns_, 1000);
  rto_base_ns_ = Max(config_.min_rto_ns, Min(rto, config_.max_rto_ns));
}

// How long after its transmission a frame overtaken by a later one is deemed
// lost: SRTT plus a reordering allowance of SRTT/4, widened by one quarter
// SRTT per spurious retransmission detected, up to SRTT (RFC 8985 §6.2).
uint64_t Channel::ReorderDelay() const {
  if (srtt_ns_ == 0) return rto_ns();
  return srtt_ns_ + srtt_ns_ / 4 * reorder_mult_;
}

// Marks lost frames. If that narrows the reordering allowance, frames passed
// over may be overdue under the new one: mark again, so that no deadline is
// ever left in the past.
void Channel::DetectLosses(uint64_t now_ns) {
  if (MarkLosses(now_ns)) MarkLosses(now_ns);
}

bool Channel::MarkLosses(uint64_t now_ns) {
  uint64_t rto = rto_ns();
  uint64_t reorder = ReorderDelay();
  bool narrowed = false;
  bool oldest = true;
  bool oldest_timed_out = false;
  for (uint32_t k = 0; k < in_flight(); ++k) {
    SendSlot& s = SendAt(k);
    if (s.transmissions == 0) break;  // first transmissions go in order: none after
    if (s.sacked) continue;
    if (!s.lost) {
      if (now_ns >= AddSat(s.last_tx_ns, rto)) {
        s.lost = true;
        ++counters_.timeouts;
        oldest_timed_out |= oldest;
      } else if (s.tx_order < rack_order_ && now_ns >= AddSat(s.last_tx_ns, reorder)) {
        s.lost = true;
        ++counters_.fast_retransmits;
        // Back to the narrowest allowance after a run of useful ones.
        if (++fast_since_spurious_ >= kReorderDecay) {
          narrowed |= reorder_mult_ != 1;
          reorder_mult_ = 1;
          fast_since_spurious_ = 0;
        }
      }
    }
    oldest = false;
  }
  if (oldest_timed_out && backoff_ < kMaxBackoff && rto < config_.max_rto_ns) ++backoff_;
  return narrowed;
}

// ---- Receiving --------------------------------------------------------------

uint64_t Channel::SackBits() const {
  if (buffered_ == 0) return 0;
  uint64_t bits = 0;
  for (uint32_t i = 0; i < 64 && 1 + i < config_.recv_window; ++i) {
    if (RecvAt(1 + i).used) bits |= uint64_t{1} << i;
  }
  return bits;
}

void Channel::AckAt(uint64_t due_ns) {
  if (!ack_pending_ || due_ns < ack_due_ns_) ack_due_ns_ = due_ns;
  ack_pending_ = true;
}

void Channel::CountReceived(uint32_t frames, bool immediate, uint64_t now_ns) {
  unacked_received_ += frames;
  if (immediate || unacked_received_ >= config_.ack_every) {
    AckAt(now_ns);
  } else {
    AckAt(AddSat(now_ns, config_.ack_delay_ns));
  }
}

DropReason Channel::OnReceive(const FrameView& frame, uint64_t now_ns, DeliverFn deliver) {
  if (state_ != State::kOpen) {
    ++counters_.rejected_closed;
    return DropReason::kPeerClosed;
  }
  const FrameHeader& h = frame.header();
  if (h.source != config_.address.destination || h.job != config_.address.job ||
      h.destination != config_.address.source) {
    ++counters_.wrong_source;
    if (h.job != config_.address.job) return DropReason::kWrongJob;
    if (h.destination != config_.address.source) return DropReason::kWrongDestination;
    return DropReason::kWrongSource;
  }
  ProcessAck(h, now_ns);
  if (h.ack_only()) {
    ++counters_.acks_received;
    return DropReason::kNone;
  }

  int32_t d = SeqDiff(h.seq, rcv_nxt_);
  if (d < 0) {
    if (static_cast<uint32_t>(-static_cast<int64_t>(d)) > kDuplicateHorizon) {
      ++counters_.stale;
      return DropReason::kStale;
    }
    ++counters_.duplicates;
    AckAt(now_ns);
    return DropReason::kDuplicate;
  }
  if (static_cast<uint32_t>(d) >= config_.recv_window) {
    ++counters_.out_of_window;
    AckAt(now_ns);
    return DropReason::kOutOfWindow;
  }
  if (d > 0) {
    RecvSlot& r = RecvAt(static_cast<uint32_t>(d));
    if (r.used) {
      ++counters_.duplicates;
      AckAt(now_ns);
      return DropReason::kDuplicate;
    }
    std::memcpy(r.frame, frame.data(), frame.size());
    r.header = h;
    r.used = true;
    ++buffered_;
    ++counters_.frames_received;
    ++counters_.frames_buffered;
    CountReceived(1, true, now_ns);  // report the hole without delay
    return DropReason::kNone;
  }

  // In order: this frame and every buffered frame right behind it. State is
  // advanced before each delivery, so `deliver` sees a consistent channel
  // (and an ack it triggers through Poll covers the frame being delivered).
  // Slots are only written by OnReceive, which `deliver` may not call, so a
  // slot stays intact while it is being delivered.
  ++counters_.frames_received;
  uint32_t run = 1;
  while (run < config_.recv_window && RecvAt(run).used) ++run;
  CountReceived(run, run > 1 || (h.flags & kFlagAckNow) != 0, now_ns);
  delivering_ = true;
  ++rcv_nxt_;
  recv_head_ = (recv_head_ + 1) % config_.recv_window;
  ++counters_.frames_delivered;
  deliver(frame);
  for (uint32_t i = 1; i < run && state_ == State::kOpen; ++i) {
    RecvSlot& r = RecvAt(0);
    r.used = false;
    --buffered_;
    ++rcv_nxt_;
    recv_head_ = (recv_head_ + 1) % config_.recv_window;
    ++counters_.frames_delivered;
    deliver(FrameView(r.header, r.frame));
  }
  delivering_ = false;
  if (state_ == State::kClosed) FreeStorage();  // closed by `deliver`
  return DropReason::kNone;
}

// ---- Transmitting -----------------------------------------------------------

void Channel::AckSent() {
  ack_pending_ = false;
  unacked_received_ = 0;
}

bool Channel::TransmitData(uint32_t offset, uint64_t now_ns, TransmitFn& transmit) {
  SendSlot& s = SendAt(offset);
  bool again = s.transmissions != 0;
  FrameHeader h;
  h.flags = again ? (kFlagRetransmit | kFlagAckNow) : 0;
  if (offset + 1 == window()) h.flags |= kFlagAckNow;  // fills the window
  h.message_count = s.message_count;
  h.job = config_.address.job;
  h.source = config_.address.source;
  h.destination = config_.address.destination;
  h.seq = snd_una_ + offset;
  h.ack = rcv_nxt_;
  h.sack = SackBits();
  h.window = static_cast<uint16_t>(config_.recv_window);
  h.payload_length = s.payload_length;
  SealFrame(s.frame, h, config_.key);
  if (!transmit(s.frame, kHeaderBytes + s.payload_length)) {
    ++counters_.transmit_refused;
    return false;
  }
  if (again) {
    ++counters_.frames_retransmitted;
  } else {
    ++counters_.frames_sent;
  }
  ++s.transmissions;
  s.lost = false;
  s.last_tx_ns = now_ns;
  s.tx_order = ++tx_order_;
  AckSent();
  return true;
}

bool Channel::TransmitAck(TransmitFn& transmit) {
  FrameHeader h;
  h.flags = kFlagAckOnly;
  h.job = config_.address.job;
  h.source = config_.address.source;
  h.destination = config_.address.destination;
  h.seq = snd_nxt_;
  h.ack = rcv_nxt_;
  h.sack = SackBits();
  h.window = static_cast<uint16_t>(config_.recv_window);
  SealFrame(ack_frame_, h, config_.key);
  if (!transmit(ack_frame_, kHeaderBytes)) {
    ++counters_.transmit_refused;
    return false;
  }
  ++counters_.acks_sent;
  AckSent();
  return true;
}

uint64_t Channel::Poll(uint64_t now_ns, TransmitFn transmit) {
  if (state_ != State::kOpen) return kNoDeadline;
  DetectLosses(now_ns);
  uint32_t limit = in_flight() < window() ? in_flight() : window();
  for (uint32_t k = 0; k < limit; ++k) {
    const SendSlot& s = SendAt(k);
    if (s.transmissions != 0 && !s.lost) continue;
    if (!TransmitData(k, now_ns, transmit)) return 0;
  }
  if (ack_pending_ && now_ns >= ack_due_ns_ && !TransmitAck(transmit)) return 0;
  return NextDeadline();
}

uint32_t Channel::ResendDroppedBefore(uint64_t before_ns) {
  if (state_ != State::kOpen) return 0;
  uint32_t marked = 0;
  for (uint32_t k = 0; k < in_flight(); ++k) {
    SendSlot& s = SendAt(k);
    if (s.transmissions == 0) break;  // first transmissions go in order: none after
    if (s.sacked || s.lost || s.last_tx_ns >= before_ns) continue;
    s.lost = true;
    ++marked;
  }
  counters_.resent_dropped += marked;
  return marked;
}

uint64_t Channel::NextDeadline() const {
  if (state_ != State::kOpen) return kNoDeadline;
  uint64_t deadline = ack_pending_ ? ack_due_ns_ : kNoDeadline;
  uint64_t rto = rto_ns();
  uint64_t reorder = ReorderDelay();
  uint32_t limit = in_flight() < window() ? in_flight() : window();
  for (uint32_t k = 0; k < in_flight(); ++k) {
    const SendSlot& s = SendAt(k);
    if (s.transmissions == 0 || s.lost) {
      if (k < limit) return 0;  // waiting to be transmitted
      continue;
    }
    if (s.sacked) continue;
    deadline = Min(deadline, AddSat(s.last_tx_ns, rto));
    if (s.tx_order < rack_order_) deadline = Min(deadline, AddSat(s.last_tx_ns, reorder));
  }
  return deadline;
}

void Channel::Close() {
  if (state_ == State::kClosed) return;
  if (state_ == State::kOpen) counters_.dropped_on_close += in_flight() + buffered_;
  state_ = State::kClosed;
  ack_pending_ = false;
  snd_una_ = snd_nxt_;
  buffered_ = 0;
  if (!delivering_) FreeStorage();
}

}  // namespace fox::net
