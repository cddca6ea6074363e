// Frame encoding and validation. See am_frame.h for the layout.
#include "fox/net/am_frame.h"

#include <cstring>

#include "fox/net/wire.h"

namespace fox::net {

namespace off = frame_offset;

uint64_t FrameMac(const SipKey& key, const uint8_t* frame, size_t len) {
  static constexpr uint8_t kZeros[8] = {};
  SipHasher h(key);
  h.Update(frame, off::kMac);
  h.Update(kZeros, sizeof kZeros);
  h.Update(frame + off::kMac + 8, len - (off::kMac + 8));
  return h.Final();
}

void SealFrame(uint8_t* frame, const FrameHeader& header, const SipKey& key) {
  wire::Store32(frame + off::kMagic, kFrameMagic);
  frame[off::kVersion] = header.version;
  frame[off::kFlags] = header.flags;
  wire::Store16(frame + off::kCount, header.message_count);
  wire::Store64(frame + off::kJob, header.job);
  wire::Store32(frame + off::kSource, header.source);
  wire::Store32(frame + off::kDestination, header.destination);
  wire::Store32(frame + off::kSeq, header.seq);
  wire::Store32(frame + off::kAck, header.ack);
  wire::Store64(frame + off::kSack, header.sack);
  wire::Store16(frame + off::kWindow, header.window);
  wire::Store16(frame + off::kPayloadLength, header.payload_length);
  wire::Store32(frame + off::kReserved, 0);
  wire::Store64(frame + off::kMac, FrameMac(key, frame, kHeaderBytes + size_t{header.payload_length}));
}

AmMessage MessageIterator::operator*() const {
  return AmMessage{EbbId{wire::Load32(record_)}, HandlerId{wire::Load16(record_ + 4)}, wire::Load16(record_ + 6),
                   record_ + kRecordHeaderBytes};
}

MessageIterator& MessageIterator::operator++() {
  record_ += RecordBytes(wire::Load16(record_ + 6));
  return *this;
}

namespace {

Result<FrameView> Drop(DropReason why, DropReason* reason) {
  if (reason != nullptr) *reason = why;
  return Error::kInvalidArgument;
}

// Checks the records of an authenticated payload: exactly `count` records,
// each inside the payload, with zero padding, filling it exactly.
DropReason CheckRecords(const uint8_t* payload, size_t length, size_t count) {
  size_t at = 0;
  size_t seen = 0;
  while (at < length) {
    if (seen == count) return DropReason::kBadCount;  // records beyond the count
    if (length - at < kRecordHeaderBytes) return DropReason::kRecordOverrun;
    size_t data_len = wire::Load16(payload + at + 6);
    size_t record = RecordBytes(data_len);
    if (record > length - at) return DropReason::kRecordOverrun;
    for (size_t i = kRecordHeaderBytes + data_len; i < record; ++i) {
      if (payload[at + i] != 0) return DropReason::kBadPadding;
    }
    at += record;
    ++seen;
  }
  return seen == count ? DropReason::kNone : DropReason::kBadCount;
}

}  // namespace

Result<FrameView> DecodeFrame(const uint8_t* bytes, size_t len, const SipKey& key, uint64_t expected_job,
                              uint32_t my_node, DropReason* reason) {
  // Cheap checks first, so that stray traffic costs no MAC computation.
  if (len < kHeaderBytes) return Drop(DropReason::kTruncated, reason);
  if (len > kMaxFrameBytes) return Drop(DropReason::kOversized, reason);
  if (wire::Load32(bytes + off::kMagic) != kFrameMagic) return Drop(DropReason::kBadMagic, reason);

  FrameHeader h;
  h.version = bytes[off::kVersion];
  if (h.version != kFrameVersion) return Drop(DropReason::kBadVersion, reason);
  h.flags = bytes[off::kFlags];
  h.message_count = wire::Load16(bytes + off::kCount);
  h.job = wire::Load64(bytes + off::kJob);
  h.source = wire::Load32(bytes + off::kSource);
  h.destination = wire::Load32(bytes + off::kDestination);
  h.seq = wire::Load32(bytes + off::kSeq);
  h.ack = wire::Load32(bytes + off::kAck);
  h.sack = wire::Load64(bytes + off::kSack);
  h.window = wire::Load16(bytes + off::kWindow);
  h.payload_length = wire::Load16(bytes + off::kPayloadLength);
  h.mac = wire::Load64(bytes + off::kMac);
  if (h.job != expected_job) return Drop(DropReason::kWrongJob, reason);
  if (h.destination != my_node) return Drop(DropReason::kWrongDestination, reason);
  size_t available = len - kHeaderBytes;
  if (h.payload_length > available) return Drop(DropReason::kTruncated, reason);
  if (h.payload_length < available || h.payload_length % 8 != 0) {
    return Drop(DropReason::kBadLength, reason);
  }

  // Nothing past this point is looked at before it is authenticated.
  if (FrameMac(key, bytes, len) != h.mac) return Drop(DropReason::kBadMac, reason);

  if ((h.flags & ~kKnownFlags) != 0 || wire::Load32(bytes + off::kReserved) != 0) {
    return Drop(DropReason::kBadFlags, reason);
  }
  if (h.ack_only() != (h.message_count == 0)) return Drop(DropReason::kBadCount, reason);
  DropReason records = CheckRecords(bytes + kHeaderBytes, h.payload_length, h.message_count);
  if (records != DropReason::kNone) return Drop(records, reason);

  if (reason != nullptr) *reason = DropReason::kNone;
  return FrameView(h, bytes);
}

FrameBuilder::FrameBuilder(uint8_t* buffer, size_t capacity, const FrameAddress& address)
    : buffer_(buffer), capacity_(capacity < kMaxFrameBytes ? capacity : kMaxFrameBytes), address_(address) {}

size_t FrameBuilder::room() const {
  size_t used = kHeaderBytes + payload_bytes_ + kRecordHeaderBytes;
  if (capacity_ < used || count_ == kMaxMessagesPerFrame) return 0;
  return (capacity_ - used) & ~size_t{7};
}

Result<uint8_t*> FrameBuilder::Reserve(EbbId ebb, HandlerId handler, size_t len) {
  size_t record = RecordBytes(len);
  if (len > kMaxMessageBytes || kHeaderBytes + record > capacity_) return Error::kOutOfRange;
  if (kHeaderBytes + payload_bytes_ + record > capacity_) return static_cast<uint8_t*>(nullptr);
  uint8_t* r = buffer_ + kHeaderBytes + payload_bytes_;
  wire::Store32(r, Raw(ebb));
  wire::Store16(r + 4, Raw(handler));
  wire::Store16(r + 6, static_cast<uint16_t>(len));
  std::memset(r + kRecordHeaderBytes + len, 0, record - kRecordHeaderBytes - len);
  payload_bytes_ += record;
  ++count_;
  return r + kRecordHeaderBytes;
}

Result<bool> FrameBuilder::Add(EbbId ebb, HandlerId handler, const void* data, size_t len) {
  Result<uint8_t*> at = Reserve(ebb, handler, len);
  if (!at.ok()) return at.error();
  if (*at == nullptr) return false;
  if (len != 0) std::memcpy(*at, data, len);
  return true;
}

size_t FrameBuilder::Finish(uint32_t seq, uint32_t ack, uint16_t window, const SipKey& key, uint8_t flags,
                            uint64_t sack) {
  if (capacity_ < kHeaderBytes) return 0;  // no room for a header: nothing written
  FrameHeader h;
  h.flags = static_cast<uint8_t>(flags & (kFlagRetransmit | kFlagAckNow | kFlagFenced));
  if (count_ == 0) h.flags |= kFlagAckOnly;
  h.message_count = static_cast<uint16_t>(count_);
  h.job = address_.job;
  h.source = address_.source;
  h.destination = address_.destination;
  h.seq = seq;
  h.ack = ack;
  h.sack = sack;
  h.window = window;
  h.payload_length = static_cast<uint16_t>(payload_bytes_);
  SealFrame(buffer_, h, key);
  return kHeaderBytes + payload_bytes_;
}

void FrameBuilder::Reset() {
  payload_bytes_ = 0;
  count_ = 0;
}

}  // namespace fox::net
