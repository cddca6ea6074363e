// Job control: the link between a job's place 0 and the frontend that
// started it (`fox run`, boot/fox/job.py; DESIGN.md "Frontend and jobs"),
// apart from the transport it uses. Hosted place 0 only: `fox run` starts
// it with two pipes (frontend_link_hosted.cc says their lines),
//   FOX_NOTICE_FD   frontend -> place 0: "dead N" (a node's QEMU exited:
//                   am::NotifyDead tells the whole job), "status" (report
//                   the nodes' status: OnStatusRequest's handler);
//   FOX_CONTROL_FD  place 0 -> frontend: Tell's lines ("add N":
//                   RequestNodes; "status N\tKEY VALUE...": a node's report).
// Nodes and programs not started by `fox run` have no link: Tell and
// RequestNodes answer kUnsupported, and no status request ever comes.
#pragma once

#include <cstdint>
#include <string_view>

#include "fox/function.h"
#include "fox/result.h"

namespace fox::frontend {

// `handler` runs (an event on the transport core) each time the frontend
// asks for the job's nodes' status; it answers with Tell. One handler (the
// Messenger's, ebb/messenger.cc); nullptr removes it. Any context.
void OnStatusRequest(Function<void()> handler);
// Writes `line` (no newline in it; at most 4000 bytes, so that the pipe
// takes it whole) to the frontend. kUnsupported when not started by `fox
// run` (or it went away); kInvalidArgument for a bad line. Any context.
Result<void> Tell(std::string_view line);
// Asks the frontend for `count` more nodes in this job (they join by
// speaking: AmEndpoint::OnDatagram); `fox run` starts them with fresh ids
// and every member in fox.peers. kUnsupported without a link,
// kInvalidArgument for 0 or more than 64. Any context that may block.
Result<void> RequestNodes(uint32_t count);

namespace internal {
// Hosted: watches FOX_NOTICE_FD on the transport core (am_hosted.cc's
// Start calls it); nothing without one. Natively: nothing.
void WatchNotices(int core);
}  // namespace internal

}  // namespace fox::frontend
