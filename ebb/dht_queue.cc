// libFOX's task queue on the Dht (dht_queue.h).
#include "fox/ebb/dht_queue.h"

#include <cstdlib>

#include "fox/ebb/dht.h"
#include "fox/timer.h"

namespace fox::ebb {
namespace {
// How long a pop waits for its slot once a task has been counted ready for
// it: the pusher fills the slot before counting it, so this only covers a
// slow write racing ours.
constexpr uint32_t kSlotWaitMs = 30'000;
}  // namespace

bool DhtQueue::NameOk() const {
  return !name_.empty() && name_.size() <= kMaxName && name_.find('/') == std::string::npos;
}

Result<void> DhtQueue::Push(const std::string& task) {
  if (!NameOk() || task.size() > kDhtMaxValue) return Error::kInvalidArgument;
  auto dht = Dht::Get();
  auto tail = dht->Add(name_ + "/tail", 1);
  if (!tail.ok()) return tail.error();
  auto set = dht->Set(name_ + "/" + std::to_string(*tail - 1), task);
  if (!set.ok()) return set.error();
  auto ready = dht->Add(name_ + "/ready", 1);
  if (!ready.ok()) return ready.error();
  return Ok();
}

Result<std::string> DhtQueue::Pop(uint32_t wait_ms) {
  if (!NameOk()) return Error::kInvalidArgument;
  auto dht = Dht::Get();
  auto taken = dht->Take(name_ + "/ready", 1, wait_ms);
  if (!taken.ok()) return taken.error();
  auto head = dht->Add(name_ + "/head", 1);
  if (!head.ok()) return head.error();
  std::string slot = name_ + "/" + std::to_string(*head - 1);
  auto item = dht->WaitFor(slot, 0, kSlotWaitMs);
  if (!item.ok()) return item.error();
  (void)dht->Delete(slot);  // kNotFound only if someone else deleted it: the task is ours still
  return std::move(item->value);
}

Result<DhtQueue::Counters> DhtQueue::Read() const {
  auto dht = Dht::Get();
  Counters c;
  for (auto [which, value] : {std::pair{"/ready", &c.ready}, {"/head", &c.head}, {"/tail", &c.tail}}) {
    auto item = dht->Get(name_ + which);
    if (item.ok()) {
      *value = std::strtoull(item->value.c_str(), nullptr, 10);
    } else if (item.error() != Error::kNotFound) {
      return item.error();
    }
  }
  return c;
}

Result<uint64_t> DhtQueue::Recover(uint32_t settle_ms) {
  if (!NameOk()) return Error::kInvalidArgument;
  auto first = Read();
  if (!first.ok()) return first.error();
  if (first->ready != 0 || first->tail <= first->head) return uint64_t(0);
  timer::Sleep(uint64_t(settle_ms) * 1000000);
  auto second = Read();
  if (!second.ok()) return second.error();
  if (!(*second == *first)) return uint64_t(0);  // it moved: a pop or a push was on its way
  uint64_t stranded = first->tail - first->head;
  auto ready = Dht::Get()->Add(name_ + "/ready", stranded);
  if (!ready.ok()) return ready.error();
  return stranded;
}

}  // namespace fox::ebb
