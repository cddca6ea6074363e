// dht_node sync ROUNDS [R]: libFOX under contention (dht_node.cc lists the
// scenarios).
//
// libFOX under contention from every node at once (dht.h's Add, Take,
// WaitFor; dht_queue.h): a counter every node adds to ROUNDS times; 8
// counters 4 events on every core of every node add to ROUNDS times each
// (a node's cores write each other's shards: dht/local.cc's WriteShared where a key
// has no other owner, as in a node alone; no add may be lost); a
// semaphore every node posts ROUNDS times (from an event on each core) while taking
// ROUNDS (from another, waiting at the primary); a task queue every node
// pushes ROUNDS tasks to while popping ROUNDS, each task seen exactly once
// (counted in the Dht); a task a dead popper stranded, recovered
// (DhtQueue::Recover); waits that time out and takes of a non-counter.
// Barriers between the phases are Dht counters too.
#include <algorithm>
#include <string>

#include "fox/core.h"
#include "fox/ebb/dht_queue.h"
#include "fox/event.h"
#include "fox/future.h"

#include "common.h"

namespace dht_node {
namespace {

// Every node Adds 1 to `name` and waits until all have.
void Barrier(Dht* dht, const std::string& name, uint64_t nodes) {
  CHECK(dht->Add(name, 1).ok());
  auto all = dht->WaitFor(name, nodes, 120'000);
  CHECK(all.ok());
}

// Runs `fn` in an event of its own; the future is done when it returns.
fox::Future<int> Concurrently(fox::Function<void()> fn) {
  auto promise = std::make_shared<fox::Promise<int>>();
  auto future = promise->GetFuture();
  fox::event::Spawn([promise, fn = std::move(fn)]() mutable {
    fn();
    promise->SetValue(0);
  });
  return future;
}

void Sync(Dht* dht, uint64_t rounds, uint64_t nodes) {
  NodeId self = fox::am::Self();
  Barrier(dht, "sync:start", nodes);

  // A counter.
  for (uint64_t i = 0; i < rounds; ++i) CHECK(dht->Add("sync:counter", 1).ok());
  Barrier(dht, "sync:counted", nodes);
  auto counter = dht->Get("sync:counter");
  CHECK(counter.ok() && counter->value == std::to_string(nodes * rounds));
  std::printf("dht_sync: node %u: counter %s after %llu nodes added %llu each\n", self, counter->value.c_str(),
              (unsigned long long)nodes, (unsigned long long)rounds);

  // Counters every core adds to at once (every node has as many cores).
  constexpr int kEventsPerCore = 4, kCounters = 8;
  int cores = fox::core::Online();
  std::vector<fox::Future<int>> adders;
  for (int core = 0; core < cores; ++core) {
    for (int e = 0; e < kEventsPerCore; ++e) {
      auto promise = std::make_shared<fox::Promise<int>>();
      adders.push_back(promise->GetFuture());
      fox::event::SpawnRemote(core, [dht, rounds, promise, e] {
        for (uint64_t i = 0; i < rounds; ++i) {
          CHECK(dht->Add("sync:cores:" + std::to_string((i + uint64_t(e)) % kCounters), 1).ok());
        }
        promise->SetValue(0);
      });
    }
  }
  for (auto& adder : adders) adder.Block();
  Barrier(dht, "sync:cores", nodes);
  uint64_t added = 0;
  for (int k = 0; k < kCounters; ++k) {
    auto value = dht->Get("sync:cores:" + std::to_string(k));
    CHECK(value.ok());
    added += std::strtoull(value->value.c_str(), nullptr, 10);
  }
  CHECK(added == nodes * uint64_t(cores) * kEventsPerCore * rounds);
  std::printf(
      "dht_sync: node %u: %llu adds from %d events on each of %d cores of every node, none lost (%llu writes "
      "applied here to another core's shard)\n",
      self, (unsigned long long)added, kEventsPerCore, cores, (unsigned long long)dht->stats().shared_writes);

  // A semaphore: takes wait at the primary for posts from every node, and
  // from every core of it (whichever core the key's shard lies on).
  std::vector<fox::Future<int>> posts;
  for (int core = 0; core < cores; ++core) {
    uint64_t mine = rounds / uint64_t(cores) + (uint64_t(core) < rounds % uint64_t(cores) ? 1 : 0);
    auto promise = std::make_shared<fox::Promise<int>>();
    posts.push_back(promise->GetFuture());
    fox::event::SpawnRemote(core, [dht, mine, promise] {
      for (uint64_t i = 0; i < mine; ++i) {
        CHECK(dht->Add("sync:sem", 1).ok());
        SleepMs(1);
      }
      promise->SetValue(0);
    });
  }
  uint64_t took = 0;
  for (uint64_t i = 0; i < rounds; ++i) {
    auto left = dht->Take("sync:sem", 1, 60'000);
    CHECK(left.ok());
    ++took;
  }
  for (auto& post : posts) post.Block();
  Barrier(dht, "sync:semaphored", nodes);
  auto sem = dht->Get("sync:sem");
  CHECK(sem.ok() && sem->value == "0");
  std::printf("dht_sync: node %u: took %llu of the semaphore, every node done, it holds %s\n", self,
              (unsigned long long)took, sem->value.c_str());

  // A take waiting at the primary is woken by a post from any core (a
  // write from a core other than the shard's never skips the wake: the
  // take closed those writes).
  uint64_t slowest_ms = 0;
  for (int core = 0; core < cores; ++core) {
    std::string key = "sync:wake:" + std::to_string(self) + ":" + std::to_string(core);
    CHECK(dht->Set(key, "0").ok());
    uint64_t took_ms = 0;
    auto taken = Concurrently([dht, key, &took_ms] {
      uint64_t t0 = fox::clock::NowNs();
      CHECK(dht->Take(key, 1, 20'000).ok());
      took_ms = (fox::clock::NowNs() - t0) / 1'000'000;
    });
    SleepMs(100);  // the take waits at the primary by now
    auto posted = std::make_shared<fox::Promise<int>>();
    auto post = posted->GetFuture();
    fox::event::SpawnRemote(core, [dht, key, posted] {
      CHECK(dht->Add(key, 1).ok());
      posted->SetValue(0);
    });
    post.Block();
    taken.Block();
    CHECK(took_ms < 10'000);
    slowest_ms = std::max(slowest_ms, took_ms);
  }
  std::printf("dht_sync: node %u: a waiting take woken by a post from each of %d cores (slowest after %llu ms)\n", self,
              cores, (unsigned long long)slowest_ms);

  // A task queue: every task popped once, somewhere.
  fox::ebb::DhtQueue queue("sync-queue");
  auto pushes = Concurrently([&queue, rounds, self] {
    for (uint64_t i = 0; i < rounds; ++i)
      CHECK(queue.Push("task:" + std::to_string(self) + ":" + std::to_string(i)).ok());
  });
  for (uint64_t i = 0; i < rounds; ++i) {
    auto task = queue.Pop(60'000);
    CHECK(task.ok());
    auto seen = dht->Add("sync:seen:" + *task, 1);
    CHECK(seen.ok() && *seen == 1);  // nobody popped it before
  }
  pushes.Block();
  Barrier(dht, "sync:queued", nodes);
  uint64_t missing = 0;
  for (uint64_t n = 0; n < nodes; ++n) {
    for (uint64_t i = 0; i < rounds; ++i) {
      auto seen = dht->Get("sync:seen:task:" + std::to_string(n) + ":" + std::to_string(i));
      missing += seen.ok() && seen->value == "1" ? 0 : 1;
    }
  }
  CHECK(missing == 0);
  std::printf("dht_sync: node %u: popped %llu tasks, all %llu tasks of every node popped exactly once\n", self,
              (unsigned long long)rounds, (unsigned long long)(nodes * rounds));

  // A popper that dies between its Take and its slot (played here by a bare
  // Take of the queue's count): its task stays unpoppable until Recover
  // counts it ready again; a queue with nothing stranded is left alone.
  fox::ebb::DhtQueue own("sync-own-" + std::to_string(self));
  CHECK(own.Push("stranded").ok());
  CHECK(dht->Take("sync-own-" + std::to_string(self) + "/ready", 1, 1000).ok());
  CHECK(own.Pop(200).error() == fox::Error::kTimedOut);
  auto credited = own.Recover(300);
  CHECK(credited.ok() && *credited == 1);
  auto recovered = own.Pop(1000);
  CHECK(recovered.ok() && *recovered == "stranded");
  auto nothing = own.Recover(300);
  CHECK(nothing.ok() && *nothing == 0);
  std::printf("dht_sync: node %u: a task a popper stranded counted ready again and popped\n", self);

  // Waits that end, and bad uses.
  uint64_t t0 = fox::clock::NowNs();
  CHECK(dht->Take("sync:never-" + std::to_string(self), 1, 300).error() == fox::Error::kTimedOut);
  CHECK(dht->WaitFor("sync:absent-" + std::to_string(self), 0, 300).error() == fox::Error::kTimedOut);
  uint64_t waited_ms = (fox::clock::NowNs() - t0) / 1'000'000;
  CHECK(waited_ms >= 600 && waited_ms < 5'000);
  CHECK(dht->Set("sync:text-" + std::to_string(self), "abc").ok());
  CHECK(dht->Take("sync:text-" + std::to_string(self), 1, 1000).error() == fox::Error::kUnsupported);
  CHECK(dht->Add("sync:text-" + std::to_string(self), 1).error() == fox::Error::kUnsupported);
  CHECK(fox::ebb::DhtQueue("bad/name").Push("x").error() == fox::Error::kInvalidArgument);
  CHECK(queue.Pop(200).error() == fox::Error::kTimedOut);
  Barrier(dht, "sync:end", nodes);
  // Leaving is a death to the others and loses the data of r nodes that
  // leave, so nobody leaves before everyone passed the barrier, and the
  // word to leave comes by message, not through the Dht: node 0 leaves
  // last.
  CHECK(dht->Add("sync:passed", 1).ok());
  if (self == 0) {
    CHECK(dht->WaitFor("sync:passed", nodes, 120'000).ok());
    for (NodeId n : fox::am::Peers()) {
      if (n != self) Control(n, kQuit, 0);
    }
    CHECK(WaitUntil(60'000, [] {
      for (NodeId n : fox::am::Peers()) {
        if (n != fox::am::Self() && fox::am::State(n) != fox::am::PeerState::kDead) return false;
      }
      return true;
    }));
  } else {
    CHECK(WaitForNode0(120'000, [] { return g_quit.load(); }));
  }
  auto s = dht->stats();
  std::printf(
      "dht_sync: node %u: waits timed out as asked (%llu ms for two of 300 ms); %llu held here now, %llu "
      "timed out here\n",
      self, (unsigned long long)waited_ms, (unsigned long long)s.waiting, (unsigned long long)s.waits_timed_out);
}

}  // namespace

int Sync(int argc, char** argv) {
  if (argc < 3) return 2;
  uint64_t rounds = std::strtoull(argv[2], nullptr, 10);
  uint32_t r = argc > 3 ? uint32_t(std::strtoul(argv[3], nullptr, 10)) : 2;
  auto quit = [](NodeId, HandlerId handler, const uint8_t*, size_t length) {
    if (handler == kQuit && length == 8) g_quit = true;
  };
  return RunMode(quit, [rounds, r](Dht* dht) {
    fox::ebb::RingConfig ring;
    ring.replication = r;
    CHECK(dht->Start(ring).ok());
    auto peers = fox::am::Peers();
    bool listed = std::find(peers.begin(), peers.end(), fox::am::Self()) != peers.end();
    Sync(dht, rounds, peers.size() + (listed ? 0 : 1));
    return 0;
  });
}

}  // namespace dht_node
