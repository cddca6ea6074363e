// A core's receive mailbox (am_mailbox.h).
#include "am_mailbox.h"

#include <cstring>

#include "fox/log.h"

namespace fox::am::internal {

CoreMailbox::CoreMailbox(int core) : core_(core), trigger_(core, [this] { Drain(); }) {}

Result<void> CoreMailbox::Init(size_t bytes) {
  FOX_TRY(ring_.Init(bytes));
  // The first drain arms the trigger on the core (Arm must run there) and
  // takes whatever arrived before it.
  event::SpawnRemote(core_, [this] { Drain(); });
  return {};
}

bool CoreMailbox::Put(NodeId from, EbbId ebb, HandlerId handler, const uint8_t* data, size_t length) {
  uint8_t* p = ring_.Reserve(kMetaBytes + length, Raw(handler));
  if (p == nullptr) return false;
  std::memcpy(p, &from, 4);
  const uint32_t raw_ebb = Raw(ebb);
  std::memcpy(p + 4, &raw_ebb, 4);
  if (length != 0) std::memcpy(p + kMetaBytes, data, length);
  ring_.Commit();
  trigger_.Fire();
  return true;
}

Result<void> CoreMailbox::AddListener(EbbId ebb, Handler handler) {
  auto h = std::make_shared<Handler>(std::move(handler));
  SpinGuard guard(lock_);
  if (!listeners_.emplace(ebb, std::move(h)).second) return Error::kAlreadyExists;
  return {};
}

void CoreMailbox::RemoveListener(EbbId ebb) {
  std::shared_ptr<Handler> gone;  // destroyed outside the lock
  SpinGuard guard(lock_);
  auto it = listeners_.find(ebb);
  if (it == listeners_.end()) return;
  gone = std::move(it->second);
  listeners_.erase(it);
}

std::shared_ptr<Handler> CoreMailbox::Find(EbbId ebb) {
  SpinGuard guard(lock_);
  auto it = listeners_.find(ebb);
  return it == listeners_.end() ? nullptr : it->second;
}

void CoreMailbox::Drain() {
  trigger_.Arm();  // before looking: a message that arrives later posts a drain
  uint64_t generation = ++generation_;
  uint8_t copy[net::kMaxMessageBytes];
  for (int budget = 1024; budget > 0; --budget) {
    if (generation != generation_) return;  // resumed after blocking: a newer drain goes on
    net::RecordRing::Record r;
    if (!ring_.Front(&r)) return;
    NodeId from;
    uint32_t ebb;
    std::memcpy(&from, r.payload, 4);
    std::memcpy(&ebb, r.payload + 4, 4);
    size_t length = r.length - kMetaBytes;
    std::memcpy(copy, r.payload + kMetaBytes, length);
    HandlerId handler{r.tag};
    ring_.Pop(r);  // freed before the handler runs: nobody can take it twice
    std::shared_ptr<Handler> h = Find(EbbId{ebb});
    if (h == nullptr) {
      no_listener_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    // If this handler blocks, the next drain takes the messages behind it.
    if (!ring_.Empty()) trigger_.Fire();
    (*h)(from, handler, copy, length);
  }
  trigger_.Fire();  // a budget's worth: let other events run, then go on
}

}  // namespace fox::am::internal
