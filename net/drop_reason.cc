#include "fox/net/drop_reason.h"

namespace fox::net {

const char* DropReasonName(DropReason reason) {
  switch (reason) {
    case DropReason::kNone: return "none";
    case DropReason::kTruncated: return "truncated";
    case DropReason::kOversized: return "oversized";
    case DropReason::kBadMagic: return "bad_magic";
    case DropReason::kBadVersion: return "bad_version";
    case DropReason::kWrongJob: return "wrong_job";
    case DropReason::kWrongDestination: return "wrong_destination";
    case DropReason::kBadLength: return "bad_length";
    case DropReason::kBadMac: return "bad_mac";
    case DropReason::kBadFlags: return "bad_flags";
    case DropReason::kBadCount: return "bad_count";
    case DropReason::kRecordOverrun: return "record_overrun";
    case DropReason::kBadPadding: return "bad_padding";
    case DropReason::kWrongSource: return "wrong_source";
    case DropReason::kPeerClosed: return "peer_closed";
    case DropReason::kDuplicate: return "duplicate";
    case DropReason::kStale: return "stale";
    case DropReason::kOutOfWindow: return "out_of_window";
    case DropReason::kUnknownPeer: return "unknown_peer";
    case DropReason::kBackpressure: return "backpressure";
    case DropReason::kNoReceiverYet: return "no_receiver_yet";
    case DropReason::kNumReasons: break;
  }
  return "unknown";
}

uint64_t DropCounters::Total() const {
  uint64_t total = 0;
  for (size_t i = 1; i < kNumDropReasons; ++i) total += count[i];
  return total;
}

}  // namespace fox::net
