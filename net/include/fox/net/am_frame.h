// Active-message frames: the bytes of one UDP payload (DESIGN.md, "Active
// messages and the network").
//
// A frame is a 56-byte header followed by one or more message records. All
// integers are little-endian. Offsets are from the first byte of the UDP
// payload; nothing assumes the frame itself is aligned.
//
// Header (kHeaderBytes = 56):
//   off size field
//     0    4 magic            kFrameMagic, the bytes "FOXA"
//     4    1 version          kFrameVersion (1)
//     5    1 flags            kFlagAckOnly | kFlagRetransmit | kFlagAckNow; other bits 0
//     6    2 message count    records in the payload; 0 exactly when kFlagAckOnly
//     8    8 job id           frames of another job are dropped
//    16    4 source node
//    20    4 destination node
//    24    4 sequence number  of this frame in the source->destination stream
//                             (ack-only frames: the next one the source will use)
//    28    4 cumulative ack   next sequence number the source expects from the
//                             destination: every frame before it was received
//    32    8 selective acks   bit i set: frame (ack + 1 + i) was received too
//    40    2 receive window   frames the source accepts from `ack` on
//    42    2 payload length   bytes after the header; a multiple of 8
//    44    4 reserved         0
//    48    8 MAC              SipHash-2-4 with the job key over the whole frame
//                             (header and payload) with these 8 bytes as zero
//    56      payload          message records, back to back
//
// Message record (kRecordHeaderBytes = 8, then the data, then zero padding to
// the next multiple of 8; offsets relative to the record):
//     0    4 destination Ebb id
//     4    2 handler id
//     6    2 data length      bytes of data, 0..kMaxMessageBytes
//     8    n data
//   8+n    p zero padding,    p = (8 - n % 8) % 8
//
// A frame is at most kMaxFrameBytes = 1472 bytes (a 1500-byte Ethernet MTU
// minus 20 bytes of IPv4 header and 8 of UDP), so the payload is at most 1416
// bytes and one message carries at most kMaxMessageBytes = 1408 bytes of data.
// Larger payloads are the layer above's job: it splits them into messages and
// reassembles them (the channel keeps them in order), or moves them through a
// SAS segment.
//
// Message data is 8-byte aligned relative to the frame's start; handlers must
// still read it with memcpy, since a frame in a NIC buffer sits at offset 42.
// The encoding is canonical: one sequence of messages and header values has
// exactly one valid frame.
//
// Contexts: everything here is pure computation over caller memory — no
// allocation, no locks, no blocking — and is safe in interrupt context.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fox/net/drop_reason.h"
#include "fox/net/ids.h"
#include "fox/net/siphash.h"
#include "fox/result.h"

namespace fox::net {

inline constexpr uint32_t kFrameMagic = 0x41584F46;  // "FOXA" on the wire
inline constexpr uint8_t kFrameVersion = 1;

inline constexpr size_t kMaxFrameBytes = 1472;
inline constexpr size_t kHeaderBytes = 56;
inline constexpr size_t kMaxPayloadBytes = kMaxFrameBytes - kHeaderBytes;  // 1416
inline constexpr size_t kRecordHeaderBytes = 8;
inline constexpr size_t kMaxMessageBytes = kMaxPayloadBytes - kRecordHeaderBytes;      // 1408
inline constexpr size_t kMaxMessagesPerFrame = kMaxPayloadBytes / kRecordHeaderBytes;  // 177

// Frame flags.
inline constexpr uint8_t kFlagAckOnly = 1 << 0;     // no messages, no sequence number of its own
inline constexpr uint8_t kFlagRetransmit = 1 << 1;  // a retransmission (diagnostics only)
inline constexpr uint8_t kFlagAckNow = 1 << 2;      // please acknowledge without delay
// With kFlagAckOnly, outside any channel: "the job declared you dead" (the
// answer to a frame from a peer the sender holds dead; AmEndpoint fencing).
inline constexpr uint8_t kFlagFenced = 1 << 3;
inline constexpr uint8_t kKnownFlags = kFlagAckOnly | kFlagRetransmit | kFlagAckNow | kFlagFenced;

// Header field offsets.
namespace frame_offset {
inline constexpr size_t kMagic = 0;
inline constexpr size_t kVersion = 4;
inline constexpr size_t kFlags = 5;
inline constexpr size_t kCount = 6;
inline constexpr size_t kJob = 8;
inline constexpr size_t kSource = 16;
inline constexpr size_t kDestination = 20;
inline constexpr size_t kSeq = 24;
inline constexpr size_t kAck = 28;
inline constexpr size_t kSack = 32;
inline constexpr size_t kWindow = 40;
inline constexpr size_t kPayloadLength = 42;
inline constexpr size_t kReserved = 44;
inline constexpr size_t kMac = 48;
}  // namespace frame_offset

// Record bytes of a message with `len` bytes of data, padding included.
constexpr size_t RecordBytes(size_t len) { return kRecordHeaderBytes + ((len + 7) & ~size_t{7}); }

// The header's fields in host order.
struct FrameHeader {
  uint8_t version = kFrameVersion;
  uint8_t flags = 0;
  uint16_t message_count = 0;
  uint64_t job = 0;
  uint32_t source = 0;
  uint32_t destination = 0;
  uint32_t seq = 0;
  uint32_t ack = 0;
  uint64_t sack = 0;
  uint16_t window = 0;
  uint16_t payload_length = 0;
  uint64_t mac = 0;  // as received; ignored by SealFrame

  bool ack_only() const { return (flags & kFlagAckOnly) != 0; }
};

// Who a frame is from and for.
struct FrameAddress {
  uint64_t job = 0;
  uint32_t source = 0;
  uint32_t destination = 0;
  bool operator==(const FrameAddress&) const = default;
};

// The MAC of a frame of `len` bytes (header included), computed as if its MAC
// field were zero. `len` must be at least kHeaderBytes.
uint64_t FrameMac(const SipKey& key, const uint8_t* frame, size_t len);

// Writes `header` into frame[0, kHeaderBytes) — magic, the version given, all
// fields, reserved = 0 — then the MAC over frame[0, kHeaderBytes +
// header.payload_length). The payload must already be in place. Writes
// exactly what it is told: tests use it to craft invalid frames.
void SealFrame(uint8_t* frame, const FrameHeader& header, const SipKey& key);

// One message of a decoded frame. `data` points into the frame's buffer.
struct AmMessage {
  EbbId ebb{0};
  HandlerId handler{0};
  uint16_t length = 0;
  const uint8_t* data = nullptr;
};

// Walks the records of a validated payload.
class MessageIterator {
 public:
  explicit MessageIterator(const uint8_t* record) : record_(record) {}
  AmMessage operator*() const;
  MessageIterator& operator++();
  bool operator==(const MessageIterator&) const = default;

 private:
  const uint8_t* record_;
};

// A validated frame, viewed in place: valid as long as the bytes it was
// decoded from, and never copies them. `for (AmMessage m : view)` visits the
// messages in order.
class FrameView {
 public:
  const FrameHeader& header() const { return header_; }
  bool ack_only() const { return header_.ack_only(); }
  const uint8_t* data() const { return bytes_; }  // the whole frame
  size_t size() const { return kHeaderBytes + header_.payload_length; }
  const uint8_t* payload() const { return bytes_ + kHeaderBytes; }
  size_t message_count() const { return header_.message_count; }
  MessageIterator begin() const { return MessageIterator(payload()); }
  MessageIterator end() const { return MessageIterator(payload() + header_.payload_length); }

 private:
  friend Result<FrameView> DecodeFrame(const uint8_t*, size_t, const SipKey&, uint64_t, uint32_t, DropReason*);
  friend class Channel;  // re-views frames it buffered, which were validated on arrival
  FrameView(const FrameHeader& header, const uint8_t* bytes) : header_(header), bytes_(bytes) {}

  FrameHeader header_;
  const uint8_t* bytes_;
};

// Validates the `len` bytes at `bytes` as a frame of job `expected_job` for
// node `my_node`, authenticated with `key`, and returns a view of it. On
// failure returns kInvalidArgument and, if `reason` is not null, stores why:
// the first check that failed, in this order — length (kTruncated,
// kOversized), magic, version, job, destination, payload length (kTruncated,
// kBadLength), MAC, then, on authenticated bytes only, flags, count and
// records. On success stores kNone. The source is not checked: the caller
// picks the channel by it.
// Any context; no allocation; O(len).
Result<FrameView> DecodeFrame(const uint8_t* bytes, size_t len, const SipKey& key, uint64_t expected_job,
                              uint32_t my_node, DropReason* reason = nullptr);

// Aggregates messages into a caller-provided buffer, then seals the frame.
//
//   FrameBuilder b(buf, sizeof buf, {job, me, peer});
//   while (more) { auto r = b.Add(ebb, handler, p, n); if (!r.ok()) fail;
//                  if (!*r) { flush b; b.Reset(); } else next message; }
//
// The buffer must hold kHeaderBytes plus the payload wanted (kMaxFrameBytes
// for a full frame); it is written only at offsets below its capacity. Any
// context; no allocation. Not thread-safe: one builder per aggregation queue.
class FrameBuilder {
 public:
  // `capacity` above kMaxFrameBytes is treated as kMaxFrameBytes.
  FrameBuilder(uint8_t* buffer, size_t capacity, const FrameAddress& address);

  // Appends a message with a copy of `len` bytes of `data`. Returns true if
  // appended, false if the frame has no room left for it (flush, Reset, and
  // add it again), kOutOfRange if it would not fit even in an empty frame of
  // this capacity (never more than kMaxMessageBytes).
  Result<bool> Add(EbbId ebb, HandlerId handler, const void* data, size_t len);
  // Like Add, but returns where to write the `len` bytes of data, so that a
  // message can be serialized in place; nullptr when the frame is full.
  // Padding is already zeroed.
  Result<uint8_t*> Reserve(EbbId ebb, HandlerId handler, size_t len);

  // Writes the header (ack-only with no messages) and MAC for sequence number
  // `seq`, cumulative ack `ack` and receive window `window`; returns the
  // frame's length in bytes (0, writing nothing, if the capacity is less than
  // kHeaderBytes). Messages can still be added and Finish called again.
  size_t Finish(uint32_t seq, uint32_t ack, uint16_t window, const SipKey& key, uint8_t flags = 0, uint64_t sack = 0);

  // Forgets all messages (the address stays).
  void Reset();

  bool empty() const { return count_ == 0; }
  size_t message_count() const { return count_; }
  size_t payload_bytes() const { return payload_bytes_; }
  // Data bytes the largest message that still fits could carry (0 if none).
  size_t room() const;
  const FrameAddress& address() const { return address_; }
  const uint8_t* payload() const { return buffer_ + kHeaderBytes; }

 private:
  uint8_t* buffer_;
  size_t capacity_;
  FrameAddress address_;
  size_t payload_bytes_ = 0;
  size_t count_ = 0;
};

}  // namespace fox::net
