// Messenger: messages between Ebbs on different machines (EbbRT's Messenger
// Ebb), a shared system Ebb at the static id kMessengerId over the
// active-message transport (fox/net/am.h). A message is addressed to a node
// and an Ebb id, with a 16-bit handler id the Ebb defines; on the receiving
// node the Ebb's Listener gets it. The same code runs on compute nodes and in
// Linux programs (native <-> hosted traffic is just traffic).
//
//   auto m = Messenger::Get();
//   m->Listen(my_id, &receiver);                    // receive for my Ebb
//   m->SendWait(node, peer_id, kMyHandler, &req, sizeof req);
//
// Delivery context, backpressure and failure semantics are the transport's:
// see fox/net/am.h. The transport must be started (am::Start) first.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fox/ebb/ebb_ref.h"
#include "fox/ebb/shared_ebb.h"
#include "fox/ebb/static_ids.h"
#include "fox/net/am.h"

namespace fox::ebb {

using NetworkNode = am::NodeId;

class Messenger : public SharedEbb<Messenger> {
 public:
  static EbbRef<Messenger> Get() { return EbbRef<Messenger>(kMessengerId); }

  // This node's id in the job.
  NetworkNode Self() const { return am::Self(); }
  // Routes messages for Ebb `id` on this node to `listener` (one per id).
  // kInvalidArgument for the null id, kAlreadyExists.
  Result<void> Listen(EbbId id, am::Receiver* listener) {
    return id == kNullId ? Result<void>(Error::kInvalidArgument) : am::Register(id, listener);
  }
  void StopListening(EbbId id) { am::Unregister(id); }
  // Queues a message for Ebb `id` on `node` (kBusy: full, retry).
  Result<void> Send(NetworkNode node, EbbId id, uint16_t handler, const void* data, size_t length) {
    return am::Send(node, id, handler, data, length);
  }
  // For listeners replying in delivery context: a message that finds the
  // peer full waits in the transport's deferred buffer (kBusy only when
  // that is full too).
  Result<void> SendOrDefer(NetworkNode node, EbbId id, uint16_t handler, const void* data, size_t length) {
    return am::SendOrDefer(node, id, handler, data, length);
  }
  // The same as Send, blocking the calling event while the peer is full.
  Result<void> SendWait(NetworkNode node, EbbId id, uint16_t handler, const void* data, size_t length) {
    return am::SendWait(node, id, handler, data, length);
  }
  void Flush(NetworkNode node) { am::Flush(node); }
};

}  // namespace fox::ebb
