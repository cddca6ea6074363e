// DhtQueue: libFOX's task queue on the Dht (issue 13), shared by every node
// of the job: any node pushes tasks, any node pops them, each task popped
// once. Built on the Dht's counters and waits (dht.h), nothing of its own on
// the wire:
//
//   push: slot = Add("<name>/tail", 1) - 1; set "<name>/<slot>" = task;
//         Add("<name>/ready", 1)
//   pop:  Take("<name>/ready", 1, wait_ms)  (a task has been pushed for us)
//         slot = Add("<name>/head", 1) - 1; item = WaitFor("<name>/<slot>")
//         (pushes finish out of order: our slot may be filled a moment
//         after another's), delete it
//
// So tasks leave in slot order (FIFO by when their push took its slot), and
// they survive the death of fewer than r nodes as any Dht item. Limits: a
// pusher that dies between taking a slot and counting it ready leaves a
// slot nobody waits for (no task is lost: it was never pushed); one that
// dies after counting it ready but before filling it cannot happen (the
// slot is filled first). A popper that dies between its Take and its slot
// leaves the count it took unused: one task stays in its slot, unpopped,
// until Recover (below) counts it ready again; one that dies after taking
// its slot takes that task with it (its user queues it again: dataflow.h).
//
// Context: event context, any core; every call blocks the calling event.
#pragma once

#include <cstdint>
#include <string>

#include "fox/result.h"

namespace fox::ebb {

class DhtQueue {
 public:
  // Names up to kMaxName bytes, no '/'.
  static constexpr size_t kMaxName = 200;
  explicit DhtQueue(std::string name) : name_(std::move(name)) {}

  // kInvalidArgument: a bad name or a task over kDhtMaxValue; else the
  // Dht's errors.
  Result<void> Push(const std::string& task);
  // Waits up to wait_ms for a task. kTimedOut: none came (nothing taken).
  Result<std::string> Pop(uint32_t wait_ms);
  // After a popper's death: if, over settle_ms, the queue stood still with
  // tasks unpopped and none counted ready (poppers died between their Take
  // and their slot), counts those tasks ready again; returns how many.
  // Blocks settle_ms only when the first look finds tasks and no count. For
  // queues whose pushers are alive (a pusher that died between its slot and
  // its count leaves a slot that may never be filled: counting it would
  // make a popper wait for it in vain).
  Result<uint64_t> Recover(uint32_t settle_ms);

 private:
  bool NameOk() const;
  struct Counters {
    uint64_t ready = 0, head = 0, tail = 0;
    bool operator==(const Counters&) const = default;
  };
  Result<Counters> Read() const;
  std::string name_;
};

}  // namespace fox::ebb
