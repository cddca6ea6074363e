// Takes and waits held at the key's primary (dht.h: Take, WaitFor): a
// request that cannot be served yet waits in its shard's queue for the
// key, is tried again after every write to the key, in arrival order, and
// is answered kTimedOut past its deadline. Events on the shard's core.
#include "fox/clock.h"
#include "fox/event.h"
#include "fox/net/am.h"
#include "fox/timer.h"
#include "node.h"

namespace fox::ebb::dht {

void Node::Hold(Shard& s, Waiter waiter) {
  s.waiters[waiter.write.key].push_back(std::move(waiter));  // the key is read before the waiter moves
  s.Count(&Stats::waiting);
  if (!s.sweeping) {
    s.sweeping = true;
    event::Spawn([this, &s] { Sweep(s); });
  }
}

void Node::Wake(Shard& s, const std::string& key) {
  if (s.waiters.empty()) return;  // after every write: the common case costs no lookup
  auto it = s.waiters.find(key);
  if (it == s.waiters.end()) return;
  std::deque<Waiter>& queue = it->second;
  uint64_t now = clock::NowNs();
  size_t removed = 0;
  for (size_t i = 0; i < queue.size();) {
    if (am::State(queue[i].caller.node) == am::PeerState::kDead) {  // nobody to answer: take nothing for it
      queue.erase(queue.begin() + long(i));
      ++removed;
      continue;
    }
    auto served = [&] {
      EventMutexGuard g(s.items_lock, kOnShardCore);
      return s.items.Write(queue[i].write, now);
    }();
    if (!served.ok() && served.error() == Error::kBusy) {
      ++i;
      continue;
    }
    Waiter done = std::move(queue[i]);
    queue.erase(queue.begin() + long(i));
    ++removed;
    // Answered from an event of its own: answering may block, and the
    // queue must not change under this loop meanwhile.
    event::Spawn([this, &s, done = std::move(done), served = std::move(served)]() mutable {
      if (!served.ok()) return Reply(done.caller, served.error());
      Finish(s, done.caller, done.write, *served);
    });
  }
  if (queue.empty()) s.waiters.erase(it);
  SpinGuard g(s.lock);
  s.stats.waiting -= removed;
}

void Node::Finish(Shard& s, const Caller& caller, const DhtWrite& write, const DhtEntry& entry) {
  if (write.mode == DhtWrite::Mode::kTake) {
    s.Count(&Stats::served_writes);
    if (!Replicate(s, write.key, HashOf(write.key))) return Reply(caller, Error::kTimedOut);
  }
  Reply(caller, Error::kOk, dht_wire::EncodeItem(entry));
}

void Node::Sweep(Shard& s) {
  while (!s.waiters.empty()) {
    timer::Sleep(50'000'000);
    uint64_t now = clock::NowNs();
    std::vector<Waiter> late;
    for (auto it = s.waiters.begin(); it != s.waiters.end();) {
      std::deque<Waiter>& queue = it->second;
      for (size_t i = 0; i < queue.size();) {
        if (queue[i].deadline_ns > now) {
          ++i;
          continue;
        }
        late.push_back(std::move(queue[i]));
        queue.erase(queue.begin() + long(i));
      }
      it = queue.empty() ? s.waiters.erase(it) : std::next(it);
    }
    {
      SpinGuard g(s.lock);
      s.stats.waiting -= late.size();
      s.stats.waits_timed_out += late.size();
    }
    for (const Waiter& w : late) Reply(w.caller, Error::kTimedOut);  // may block: after the loop
  }
  s.sweeping = false;
}

}  // namespace fox::ebb::dht
