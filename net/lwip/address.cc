// Endpoints and status names (pure functions; any context but interrupts,
// since ToString allocates). IPv4 addresses themselves: net/ipv4.cc.
#include "fox/format.h"
#include "fox/net/ip.h"

namespace fox::net {

std::string Endpoint::ToString() const {
  char buf[24];
  Format(buf, sizeof buf, "%s:%u", ip.ToString().c_str(), unsigned(port));
  return buf;
}

const char* StatusName(Status status) {
  switch (status) {
    case Status::kOk: return "ok";
    case Status::kNotStarted: return "network not started";
    case Status::kInvalidArgument: return "invalid argument";
    case Status::kInUse: return "in use";
    case Status::kNoMemory: return "out of network memory";
    case Status::kNoRoute: return "no route";
    case Status::kTimedOut: return "timed out";
    case Status::kNotConnected: return "not connected";
    case Status::kClosed: return "closed by peer";
    case Status::kReset: return "reset by peer";
    case Status::kAborted: return "aborted";
  }
  return "unknown status";
}

}  // namespace fox::net
