// Receivers and listeners (am.h): the table from Ebb id to destination,
// dispatch of delivered messages, and the admission of frames.
#include <new>

#include "am_driver.h"
#include "am_mailbox.h"
#include "fox/log.h"

namespace fox::am {
namespace internal {
namespace {

// A mailbox of this size holds a full receive window of frames twice over.
size_t MailboxBytes() {
  size_t window = g.config.tuning.channel.recv_window + 1;
  size_t bytes = 2 * window * FrameReserve();
  return bytes < (size_t{1} << 20) ? size_t{1} << 20 : bytes;
}

size_t SlotOf(EbbId ebb) { return (uint64_t(Raw(ebb)) * 0x9E3779B97F4A7C15ull >> 40) % kReceiverSlots; }

const ReceiverSlot* Find(EbbId ebb) REQUIRES(g.lock) {
  for (size_t i = SlotOf(ebb), n = 0; n < kReceiverSlots; i = (i + 1) % kReceiverSlots, ++n) {
    if (g.receivers[i].ebb == kFree) return nullptr;
    if (g.receivers[i].ebb == ebb) return &g.receivers[i];
  }
  return nullptr;
}

Result<void> Insert(EbbId ebb, Receiver* receiver, int core) REQUIRES(g.lock) {
  if (Find(ebb) != nullptr) return Error::kAlreadyExists;
  if (g.receiver_count >= kMaxReceivers) return Error::kOutOfRange;
  size_t i = SlotOf(ebb);
  while (g.receivers[i].ebb != kFree && g.receivers[i].ebb != kTombstone) i = (i + 1) % kReceiverSlots;
  g.receivers[i] = {ebb, receiver, core};  // a tombstone is reused only when the id is not further on (Find)
  ++g.receiver_count;
  return {};
}

// The mailbox of `core`, created on first use (allocates: event context,
// never with the lock held).
Result<CoreMailbox*> MailboxOf(int core) EXCLUDES(g.lock) {
  if (CoreMailbox* mb = g.mailboxes[core].load(std::memory_order_acquire)) return mb;
  auto* mb = new (std::nothrow) CoreMailbox(core);
  if (mb == nullptr) return Error::kNoMemory;
  if (auto r = mb->Init(MailboxBytes()); !r.ok()) {
    delete mb;
    return r.error();
  }
  CoreMailbox* expected = nullptr;
  {
    Locked l;
    if (g.mailboxes[core].compare_exchange_strong(expected, mb)) return mb;
  }
  // Another core made it first. Ours has posted its first drain already: it
  // is harmless (an empty ring), so leak it rather than race that event.
  return expected;
}

}  // namespace

// Every record is a ring header (8 bytes) and 8 bytes of source and Ebb id
// before the data rounded to 8, while a frame carries its messages with 8
// bytes of header each: at most twice the frame's payload, plus a skip.
size_t FrameReserve() { return 2 * net::kMaxPayloadBytes + CoreMailbox::WorstCase(net::kMaxMessageBytes); }

void Dispatch(NodeId from, EbbId ebb, HandlerId handler, const uint8_t* data, size_t length) {
  const ReceiverSlot* slot = Find(ebb);
  if (slot == nullptr) {
    ++g.counters.no_receiver;
    return;
  }
  if (slot->receiver != nullptr) {
    slot->receiver->OnMessage(from, handler, data, length);
    return;
  }
  CoreMailbox* mb = g.mailboxes[slot->core].load(std::memory_order_acquire);
  if (mb == nullptr || !mb->Put(from, ebb, handler, data, length)) {
    ++g.counters.mailbox_overflows;  // the room check before the frame makes this unreachable
    LOG_ERROR("am: mailbox of core %d overflowed: a message from node %u lost", slot->core, from);
  }
}

bool MailboxesHaveRoom(size_t bytes) {
  for (auto& m : g.mailboxes) {
    CoreMailbox* mb = m.load(std::memory_order_acquire);
    if (mb != nullptr && mb->Room() < bytes) return false;
  }
  return true;
}

// A frame with a message for an Ebb id that has no receiver yet is refused
// (unacknowledged: the sender retransmits it), for up to kReceiverGraceNs
// since such refusals began: nodes of a job start their Ebbs at slightly
// different times (a GlobalIdMap request may reach node 0 before node 0
// has created its map). Past the grace such messages are delivered to
// nobody and counted (no_receiver), so a bogus id cannot stall a channel
// for long.
constexpr uint64_t kReceiverGraceNs = 10'000'000'000;

bool Admit(const net::FrameView& frame, uint64_t now) {
  bool delivers = false;          // to a receiver (acks and heartbeats alone do not end a grace)
  EbbId known = net::kSystemEbb;  // the last id found: aggregated frames repeat their Ebb
  for (net::AmMessage m : frame) {
    if (m.ebb == net::kSystemEbb || m.ebb == known) continue;
    if (Find(m.ebb) != nullptr) {
      delivers = true;
      known = m.ebb;
      continue;
    }
    if (g.refusing_since == 0) g.refusing_since = now;
    return now - g.refusing_since >= kReceiverGraceNs;
  }
  if (delivers) g.refusing_since = 0;
  return true;
}

}  // namespace internal

using internal::g;
using internal::Locked;

Result<void> Register(EbbId ebb, Receiver* receiver) {
  if (ebb == net::kSystemEbb || ebb == internal::kTombstone || receiver == nullptr) {
    return Error::kInvalidArgument;
  }
  Locked l;
  return internal::Insert(ebb, receiver, -1);
}

Result<void> Listen(EbbId ebb, int core, Handler handler) {
  if (ebb == net::kSystemEbb || ebb == internal::kTombstone) return Error::kInvalidArgument;
  if (core < 0 || core >= core::Online()) return Error::kOutOfRange;
  auto mb = internal::MailboxOf(core);
  if (!mb.ok()) return mb.error();
  FOX_TRY((*mb)->AddListener(ebb, std::move(handler)));
  Result<void> r{};
  {
    Locked l;
    r = internal::Insert(ebb, nullptr, core);
  }
  if (!r.ok()) (*mb)->RemoveListener(ebb);
  return r;
}

void Unregister(EbbId ebb) {
  int core = -1;
  {
    Locked l;
    for (size_t i = internal::SlotOf(ebb), n = 0; n < internal::kReceiverSlots;
         i = (i + 1) % internal::kReceiverSlots, ++n) {
      auto& slot = g.receivers[i];
      if (slot.ebb == internal::kFree) break;
      if (slot.ebb != ebb) continue;
      core = slot.core;
      slot = {internal::kTombstone, nullptr, -1};  // keeps later probes going
      --g.receiver_count;
      break;
    }
  }
  if (core >= 0) {
    if (auto* mb = g.mailboxes[core].load(std::memory_order_acquire)) mb->RemoveListener(ebb);
  }
}

}  // namespace fox::am
