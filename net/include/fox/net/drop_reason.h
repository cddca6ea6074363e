// Why a received AM frame was dropped, for counters by reason (STYLE.md §12).
//
// DecodeFrame (am_frame.h) reports the reasons up to kBadPadding; the reliable
// channel (reliable.h) reports the rest. Safe in any context.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fox::net {

enum class DropReason : uint8_t {
  kNone = 0,  // not dropped
  // DecodeFrame: the datagram is not a valid frame for this node and job.
  kTruncated,         // shorter than the header, or than its payload length says
  kOversized,         // longer than kMaxFrameBytes
  kBadMagic,          // not an AM frame at all
  kBadVersion,        // an AM frame of a version this node does not speak
  kWrongJob,          // for another job (e.g. a late frame from a previous job)
  kWrongDestination,  // for another node
  kBadLength,         // bytes after the declared payload, or payload not 8-byte sized
  kBadMac,            // MAC mismatch: corrupted, forged, or a different job key
  kBadFlags,          // unknown flag bits or non-zero reserved field
  kBadCount,          // message count disagrees with the records or the ack-only flag
  kRecordOverrun,     // a message record runs past the end of the payload
  kBadPadding,        // non-zero padding after a message (encoding is canonical)
  // Channel::OnReceive: a valid frame the channel does not accept.
  kWrongSource,  // not from this channel's peer
  kPeerClosed,   // the peer was declared dead; it stays dead
  kDuplicate,    // already delivered or already buffered (re-acked)
  kStale,        // far older than any retransmission could be (not re-acked)
  kOutOfWindow,  // beyond the receive window
  // Endpoint::OnDatagram (am_endpoint.h) and the drivers (am.h).
  kUnknownPeer,    // a valid frame from a node that is not a peer of this one
  kBackpressure,   // the receiver had no room to deliver it now (the sender retransmits)
  kNoReceiverYet,  // a message for an Ebb id with no receiver yet (the sender retransmits)
  kNumReasons,
};

inline constexpr size_t kNumDropReasons = static_cast<size_t>(DropReason::kNumReasons);

// Short stable name ("bad_mac"), for counters and logs; never null.
const char* DropReasonName(DropReason reason);

// Drop counts indexed by reason. Plain counters: one instance per core or per
// serialized receive path; the reader sums them.
struct DropCounters {
  uint64_t count[kNumDropReasons] = {};

  void Add(DropReason reason) { ++count[static_cast<size_t>(reason)]; }
  uint64_t operator[](DropReason reason) const { return count[static_cast<size_t>(reason)]; }
  // All drops (kNone excluded).
  uint64_t Total() const;
};

}  // namespace fox::net
