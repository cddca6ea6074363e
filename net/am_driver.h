// Internal: the AM driver's state (am.h is the API), shared by the files
// that make the driver, each one concern:
//   am.cc            start, sending, the receive path, the pump (timers)
//   am_receivers.cc  the table of receivers and listeners, dispatch, admission
//   am_mailbox.cc    the per-core receive mailboxes (am_mailbox.h)
//   am_peers.cc      peers, peer-state subscriptions, death notices
//   am_config.cc     boot arguments
//   am_stats.cc      counters, from one table
//
// Locking. Everything the endpoint and the receiver table hold is guarded
// by g.lock, an IrqSpinLock: senders on any core, the receive path (native:
// the NIC's interrupt on core 0; hosted: an event on the transport core) and
// the pump take it with interrupts off. Receivers run with it held and may
// Send (replies): Locked takes it unless this core holds it already
// (t_holding), so the nested Send does not deadlock. Nothing is called
// with it held but PlatformTransmit, the receivers, mailbox appends, and in
// the pump only (event context) allocation for the list of state changes.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "am_platform.h"
#include "fox/core.h"
#include "fox/event.h"
#include "fox/irq_spinlock.h"
#include "fox/net/am.h"
#include "fox/thread_annotations.h"
#include "fox/timer.h"

namespace fox::am::internal {

class CoreMailbox;

inline constexpr size_t kReceiverSlots = 2 * kMaxReceivers;  // open addressing
inline constexpr EbbId kFree{0};
inline constexpr EbbId kTombstone{UINT32_MAX};

// An Ebb id's destination: a delivery-context Receiver, or the mailbox of
// a core (Listen).
struct ReceiverSlot {
  EbbId ebb = kFree;  // kTombstone: removed (probes go on)
  Receiver* receiver = nullptr;
  int core = -1;
};

struct Waiter {
  NodeId node;
  size_t length;  // of the message it waits to send
  event::Continuation continuation;
};

struct StateCallback {
  uint64_t id;
  int core;
  std::shared_ptr<Function<void(NodeId, PeerState)>> fn;
  std::shared_ptr<std::atomic<bool>> live;  // false once stopped
};

struct Counters {
  uint64_t local_messages = 0, no_receiver = 0, backpressure_drops = 0, mailbox_overflows = 0;
  uint64_t rx_datagrams = 0, rx_bytes = 0;
};

struct Driver {
  IrqSpinLock lock;
  // Written once, by Start, before `started`; read on every core (am::Self),
  // so on cache lines of its own, apart from the lock and the counters.
  alignas(64) Config config;
  net::AmEndpoint* endpoint PT_GUARDED_BY(lock) = nullptr;
  ReceiverSlot receivers[kReceiverSlots] GUARDED_BY(lock);
  size_t receiver_count GUARDED_BY(lock) = 0;
  // Created on a core's first Listen, never destroyed; appended to with the
  // lock held (the single producer), drained by events of their core.
  std::atomic<CoreMailbox*> mailboxes[core::kMaxCores] = {};
  std::vector<Waiter> waiters GUARDED_BY(lock);
  std::vector<StateCallback> state_callbacks GUARDED_BY(lock);
  uint64_t next_subscription GUARDED_BY(lock) = 1;
  Counters counters GUARDED_BY(lock);
  // Written by Transmit, which the endpoint calls back (under the lock).
  alignas(64) std::atomic<uint64_t> tx_datagrams{0}, tx_bytes{0}, tx_failures{0};
  uint64_t refusing_since GUARDED_BY(lock) = 0;                      // first refusal for lack of a receiver (0: none)
  uint64_t last_warned[net::kNumDropReasons] GUARDED_BY(lock) = {};  // WarnAboutDrop's rate limit
  // The pump (transport core only, but for the atomics).
  event::InterruptTrigger* pump = nullptr;
  std::atomic<uint64_t> armed_deadline{net::kNoDeadline};
  timer::TimerId timer = 0;
  bool timer_armed = false;
  std::atomic<bool> started{false};
  std::atomic<bool> have_waiters{false};
  std::atomic<bool> link_resolved{false};  // LinkResolved: the pump resends what was dropped
};

extern Driver g;
extern thread_local bool t_holding;  // this core holds g.lock (natively: per core, FS-relative)

// Takes g.lock unless this core holds it already (a Receiver sending). To
// the analysis it acquires the lock; at run time a nested one is a no-op.
class SCOPED_CAPABILITY Locked {
 public:
  Locked() ACQUIRE(g.lock);
  ~Locked() RELEASE();
  Locked(const Locked&) = delete;
  Locked& operator=(const Locked&) = delete;

 private:
  bool owner_ = false;
  bool enabled_ = false;
};

// ---- am_receivers.cc ----
// Routes one message to its receiver or its core's mailbox, or counts it.
void Dispatch(NodeId from, EbbId ebb, HandlerId handler, const uint8_t* data, size_t length) REQUIRES(g.lock);
// Whether a frame may go on to its channel: false while it carries a
// message for an unregistered id, within the grace (am.h).
bool Admit(const net::FrameView& frame, uint64_t now) REQUIRES(g.lock);
// Whether every mailbox has `bytes` free.
bool MailboxesHaveRoom(size_t bytes) REQUIRES(g.lock);
// Ring bytes one frame's messages can take in a mailbox.
size_t FrameReserve();

// ---- am.cc ----
bool Transmit(uint64_t address, const uint8_t* frame, size_t length);
// Transmit as an object, for the endpoint's FunctionRef parameters.
inline constexpr auto kTransmit = [](uint64_t address, const uint8_t* frame, size_t length) {
  return Transmit(address, frame, length);
};
// Fires the pump if the armed timer may be too late for what just happened.
void KickPump(uint64_t now);

// ---- am_peers.cc ----
// Tells the OnPeerState subscribers (each as an event on its core).
void NotifySubscribers(NodeId node, PeerState state) EXCLUDES(g.lock);

}  // namespace fox::am::internal
