// Internal: a core's receive mailbox (am.h, Listen). Messages for every Ebb
// that listens on the core are copied, in delivery context, into one ring
// allocated up front, and run as events of the core, dispatched by Ebb id.
//
// Exactly once, whatever the handlers do: the drain event copies a record
// onto its own stack and frees it before calling the handler, so a second
// drain (posted when the next message arrives) can never see it again; and
// the tail is read from the ring, never from a stale local, so it cannot
// move backwards. A handler that blocks (SendWait, a future) lets the
// messages behind it go on: before calling a handler with more records
// waiting, the drain posts its successor, and a drain that resumes after
// a newer one started stops (single-flight: one drain loop runs at a time).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <unordered_map>

#include "fox/event.h"
#include "fox/net/am.h"
#include "fox/net/record_ring.h"
#include "fox/spinlock.h"

namespace fox::am::internal {

class CoreMailbox {
 public:
  explicit CoreMailbox(int core);
  CoreMailbox(const CoreMailbox&) = delete;
  CoreMailbox& operator=(const CoreMailbox&) = delete;

  // Allocates the ring (`bytes`) and posts the first drain on the core,
  // which arms the trigger. kNoMemory. Event context.
  Result<void> Init(size_t bytes);

  // Delivery context, the transport lock held (so one producer at a time):
  // copies the message and posts a drain. False when it has no room (the
  // caller checked Room before taking the frame: it counts an overflow).
  bool Put(NodeId from, EbbId ebb, HandlerId handler, const uint8_t* data, size_t length);
  size_t Room() const { return ring_.Room(); }
  // Ring bytes a message of `length` bytes takes at most.
  static size_t WorstCase(size_t length) { return net::RecordRing::WorstCase(kMetaBytes + length); }

  // The Ebb's handler (event context, any core). kAlreadyExists.
  Result<void> AddListener(EbbId ebb, Handler handler);
  void RemoveListener(EbbId ebb);
  uint64_t no_listener() const { return no_listener_.load(std::memory_order_relaxed); }

 private:
  static constexpr size_t kMetaBytes = 8;  // u32 from, u32 ebb; the handler id is the record's tag
  void Drain();
  std::shared_ptr<Handler> Find(EbbId ebb);

  int core_;
  net::RecordRing ring_;
  event::InterruptTrigger trigger_;
  uint64_t generation_ = 0;  // of the newest drain; events of core_ only
  SpinLock lock_;
  std::unordered_map<EbbId, std::shared_ptr<Handler>> listeners_ GUARDED_BY(lock_);
  std::atomic<uint64_t> no_listener_{0};
};

}  // namespace fox::am::internal
