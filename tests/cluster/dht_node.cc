// The Dht's hosted cluster test program (ebb/include/fox/ebb/dht.h): every
// node runs the Dht; one node, the client, drives it; one other node, the
// victim, is killed with SIGKILL midway. Run by hosted_nodes.py (tests.cmake).
//
//   dht_node CLIENT VICTIM KEYS [R]
//
// The client: checks the store's modes (add, cas, replace, delete, bad
// sizes) and that malformed requests are answered kInvalidArgument, sets KEYS keys of 1 to 5000 bytes and 4 values of 1
// MiB with replication R (default 2), reads them back, has the victim kill itself, reads every key back at once (calls
// in flight to the victim are retried on the new primary), writes and reads more keys on the smaller ring, waits for
// its rebuild, checks it holds every live item (with R = 2 on 3 nodes each survivor holds all after the rebuild), then
// tells the other nodes to check theirs and quit. Any failed check exits 1.
//
//   dht_node sync ROUNDS [R]
//
// libFOX under contention from every node at once (dht.h's Add, Take,
// WaitFor; dht_queue.h): a counter every node adds to ROUNDS times; 8
// counters 4 events on every core of every node add to ROUNDS times each
// (a node's cores write each other's shards: dht/local.cc's WriteShared where a key
// has no other owner, as in a node alone; no add may be lost); a
// semaphore every node posts ROUNDS times (from an event on each core) while taking
// ROUNDS (from another, waiting at the primary); a task queue every node
// pushes ROUNDS tasks to while popping ROUNDS, each task seen exactly once
// (counted in the Dht); waits that time out and takes of a non-counter.
// Barriers between the phases are Dht counters too.
//
//   dht_node join KEYS [kill]
//
// Rebalancing after a join (dht.h, "Joins"): nodes 0-2 run the Dht; node 0
// sets KEYS keys, node 3 joins while node 0 sets KEYS/2 more; every key
// reads back, and each node holds every key it owns in the ring of 4 and
// none it does not. kill: node 1 dies as the join starts (the join goes on
// in the ring without it).
//
//   dht_node tombstones KEYS
//
// Tombstones are collected (dht.h, "Tombstones"; grace 1 s here): 3 nodes,
// r = 2. Node 0 sets KEYS keys and deletes them all; the tombstones are
// there at once (a deleted key cannot come back), and within 20 s none is
// left on any node. Node 0 then sets the first half again (versions start
// over) and deletes the second half's keys again (absent now): the first
// half reads back, the second is not found, and each node holds exactly its
// copies of the first half.
//
//   dht_node zombie KEYS
//
// Fail-stop for a node the job declared dead while it still ran (am's
// fencing): 3 nodes, r = 2. Node 0 sets KEYS keys, then node 2 stops
// itself (SIGSTOP, as a starved or partitioned node would go silent); once
// node 0 sees it declared dead, node 0 rewrites every key on the
// survivors, waits for their rebuild and resumes node 2 (SIGCONT). Node 2,
// which still believes in its old ring and its stale copies, tries a write
// at once: it must never be acknowledged, and node 2 must stop (status 3)
// instead of living on beside the job. Node 0 checks every key has its new
// value and the zombie's write is nowhere.
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fox/clock.h"
#include "fox/core.h"
#include "fox/ebb/dht.h"
#include "fox/ebb/dht_hash.h"
#include "fox/ebb/dht_queue.h"
#include "fox/ebb/lifetime.h"
#include "fox/event.h"
#include "fox/future.h"
#include "fox/ebb/messenger.h"
#include "fox/ebb/rpc.h"
#include "fox/net/am.h"
#include "fox/net/wire.h"
#include "fox/result.h"
#include "fox/timer.h"

namespace {
using fox::NodeId;
using fox::ebb::Dht;
using fox::ebb::DhtWrite;

constexpr uint32_t kControl = 0x00D70001;  // this program's control messages (a dynamic-looking id)
enum : uint16_t { kDie = 1, kQuit = 2, kPid = 3, kPause = 4, kJoinGo = 5, kCheck = 6 };
std::atomic<bool> g_join_go{false};
std::atomic<uint64_t> g_check{0};
std::atomic<bool> g_quit{false};
std::atomic<uint64_t> g_expected{0};

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::printf("dht_node: check failed at line %d: %s\n", __LINE__, #cond); \
      std::fflush(stdout);                                                     \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

std::string Key(uint64_t i) { return "key:" + std::to_string(i); }
std::string Value(uint64_t i, size_t size) {
  std::string v(size, '\0');
  for (size_t k = 0; k < size; ++k) v[k] = char('a' + (i * 31 + k) % 26);
  return v;
}
// Mostly small values, some above one message (1408 bytes).
size_t SizeOf(uint64_t i) { return i % 50 == 0 ? 5000 : 1 + i % 300; }

void SleepMs(uint64_t ms) { fox::timer::Sleep(ms * 1'000'000); }

void Control(NodeId to, uint16_t handler, uint64_t arg) {
  uint8_t body[8];
  fox::net::wire::StoreLe<uint64_t>(body, arg);
  auto r = fox::ebb::Messenger::Get()->SendWait(to, kControl, handler, body, sizeof body);
  CHECK(r.ok());
  fox::ebb::Messenger::Get()->Flush(to);
}

struct Tally {
  uint64_t ok = 0, missing = 0, wrong = 0;
};

Tally ReadAll(Dht* dht, uint64_t first, uint64_t keys, int big) {
  Tally t;
  for (uint64_t i = first; i < first + keys; ++i) {
    auto got = dht->Get(Key(i));
    if (!got.ok()) {
      if (t.missing++ < 5) std::printf("dht: get %s: %s\n", Key(i).c_str(), fox::ErrorName(got.error()));
    } else if (got->value != Value(i, SizeOf(i)) || got->flags != uint32_t(i)) {
      ++t.wrong;
    } else {
      ++t.ok;
    }
  }
  for (int b = 0; b < big; ++b) {
    auto got = dht->Get("big:" + std::to_string(b));
    if (!got.ok()) {
      ++t.missing;
    } else if (got->value != Value(b, fox::ebb::kDhtMaxValue)) {
      ++t.wrong;
    } else {
      ++t.ok;
    }
  }
  return t;
}

void Modes(Dht* dht) {
  CHECK(dht->Delete("absent").error() == fox::Error::kNotFound);
  CHECK(dht->Get("absent").error() == fox::Error::kNotFound);
  DhtWrite add{.mode = DhtWrite::Mode::kAdd, .key = "add", .value = "first"};
  CHECK(dht->Put(add).ok());
  add.value = "second";
  CHECK(dht->Put(add).error() == fox::Error::kAlreadyExists);
  DhtWrite replace{.mode = DhtWrite::Mode::kReplace, .key = "nothing", .value = "x"};
  CHECK(dht->Put(replace).error() == fox::Error::kNotFound);
  auto cas = dht->Set("cas", "one", 7);
  CHECK(cas.ok());
  auto item = dht->Get("cas");
  CHECK(item.ok() && item->value == "one" && item->flags == 7 && item->cas == *cas);
  DhtWrite stale{.mode = DhtWrite::Mode::kCas, .cas = *cas + 1, .key = "cas", .value = "two"};
  CHECK(dht->Put(stale).error() == fox::Error::kAlreadyExists);
  DhtWrite fresh{.mode = DhtWrite::Mode::kCas, .cas = *cas, .key = "cas", .value = "two"};
  CHECK(dht->Put(fresh).ok());
  CHECK(dht->Get("cas")->value == "two");
  CHECK(dht->Set("gone", "soon").ok());
  CHECK(dht->Delete("gone").ok());
  CHECK(dht->Get("gone").error() == fox::Error::kNotFound);
  CHECK(dht->Delete("gone").error() == fox::Error::kNotFound);
  CHECK(dht->Set("", "x").error() == fox::Error::kInvalidArgument);
  CHECK(dht->Set(std::string(fox::ebb::kDhtMaxKey + 1, 'k'), "x").error() == fox::Error::kInvalidArgument);
  CHECK(dht->Set("huge", std::string(fox::ebb::kDhtMaxValue + 1, 'v')).error() == fox::Error::kInvalidArgument);
  std::printf("dht: add, replace, cas, delete and bad sizes answered as memcached would\n");
}

// Requests no Dht client sends: each peer answers kInvalidArgument and
// counts them; nobody crashes (the rest of the run shows it).
void BadRequests(Dht* dht) {
  uint64_t answered = 0, sent = 0;
  std::string junk(40, '\xff');
  std::string long_key(fox::ebb::kDhtMaxKey + 1, 'k');
  struct Bad {
    uint16_t handler;
    std::string body;
  };
  const Bad bad[] = {{99, "x"}, {0, ""}, {1, ""}, {1, long_key}, {2, junk}, {2, "short"}, {3, ""}, {4, junk}, {4, "1"}};
  // To the node's Ebb and to a shard's; and a get of a key to a shard that does not hold it.
  int shard = Dht::ShardOf(fox::ebb::DhtKeyHash("k", 1));
  fox::ebb::EbbId other_shard = fox::ebb::kDhtShardIds[(shard + 1) % Dht::kShards];
  for (NodeId n : fox::am::Peers()) {
    for (fox::ebb::EbbId ebb : {fox::ebb::kDhtId, fox::ebb::kDhtShardIds[shard]}) {
      for (const Bad& b : bad) {
        ++sent;
        auto r = fox::ebb::Rpc::Get()->Call(n, ebb, b.handler, b.body.data(), b.body.size()).Block();
        if (r.ok() && r->size() == 4 && fox::net::wire::Load32(r->data()) == uint32_t(fox::Error::kInvalidArgument)) {
          ++answered;
        }
      }
      // Too short to carry a request id: dropped and counted, not answered.
      CHECK(fox::ebb::Messenger::Get()->SendWait(n, ebb, 2, "abc", 3).ok());
    }
    ++sent;
    auto r = fox::ebb::Rpc::Get()->Call(n, other_shard, 1, "k", 1).Block();
    if (r.ok() && r->size() == 4 && fox::net::wire::Load32(r->data()) == uint32_t(fox::Error::kInvalidArgument)) {
      ++answered;
    }
  }
  std::printf("dht: %llu malformed requests to the peers: %llu answered invalid argument\n", (unsigned long long)sent,
              (unsigned long long)answered);
  CHECK(answered == sent);
  (void)dht;
}

bool WaitUntil(uint64_t ms, auto done) {
  uint64_t deadline = fox::clock::NowNs() + ms * 1'000'000;
  while (!done()) {
    if (fox::clock::NowNs() > deadline) return false;
    SleepMs(10);
  }
  return true;
}

// WaitUntil for a word from node 0, but false at once if node 0 ended
// first (a check of its failed: the others must not wait out the time).
bool WaitForNode0(uint64_t ms, auto done) {
  WaitUntil(ms, [&] { return done() || fox::am::State(0) == fox::am::PeerState::kDead; });
  if (!done() && fox::am::State(0) == fox::am::PeerState::kDead) std::printf("dht_node: node 0 ended first\n");
  return done();
}

// Where this node's Dht requests were served: the cores whose shards served
// any (dht.h, "Shards"), of the cores that serve shards.
void ReportShards(Dht* dht) {
  auto load = dht->CoreLoad();
  std::printf("dht: node %u served requests on %d of %zu cores (%llu gets read from another core's shard)\n",
              fox::am::Self(), int(load.size() - std::count(load.begin(), load.end(), 0)), load.size(),
              (unsigned long long)dht->stats().shared_gets);
}

// Once every peer is alive: the Dht with replication r. Returns the peers.
std::vector<NodeId> StartDht(Dht* dht, uint32_t r) {
  auto peers = fox::am::Peers();
  CHECK(WaitUntil(30'000, [&] {
    for (NodeId n : peers) {
      if (fox::am::State(n) != fox::am::PeerState::kAlive) return false;
    }
    return true;
  }));
  fox::ebb::RingConfig ring;
  ring.replication = r;
  CHECK(dht->Start(ring).ok());
  return peers;
}

void Client(Dht* dht, NodeId victim, uint64_t keys) {
  constexpr int kBig = 4;
  Modes(dht);
  BadRequests(dht);
  uint64_t t0 = fox::clock::NowNs();
  uint64_t failed = 0;
  for (uint64_t i = 0; i < keys; ++i) {
    auto r = dht->Set(Key(i), Value(i, SizeOf(i)), uint32_t(i));
    if (!r.ok() && failed++ < 5) std::printf("dht: set %s: %s\n", Key(i).c_str(), fox::ErrorName(r.error()));
  }
  for (int b = 0; b < kBig; ++b) {
    auto r = dht->Set("big:" + std::to_string(b), Value(b, fox::ebb::kDhtMaxValue));
    if (!r.ok() && failed++ < 5) std::printf("dht: set big:%d: %s\n", b, fox::ErrorName(r.error()));
  }
  std::printf("dht: set %llu keys and %d values of 1 MiB through node %u: %llu failed, %llu ms\n",
              (unsigned long long)keys, kBig, fox::am::Self(), (unsigned long long)failed,
              (unsigned long long)((fox::clock::NowNs() - t0) / 1'000'000));
  CHECK(failed == 0);
  Tally before = ReadAll(dht, 0, keys, kBig);
  std::printf("dht: read back before the kill: %llu right, %llu missing, %llu wrong\n", (unsigned long long)before.ok,
              (unsigned long long)before.missing, (unsigned long long)before.wrong);
  CHECK(before.ok == keys + kBig);

  std::printf("dht: killing node %u\n", victim);
  std::fflush(stdout);
  Control(victim, kDie, 0);
  // Writes while it dies: some go to it as primary, some to it as replica.
  // Adds of new keys and increments of a counter: a call whose primary
  // died after applying it is sent again, and must neither answer
  // kAlreadyExists nor count twice (exactly once: dht_items.h).
  t0 = fox::clock::NowNs();
  failed = 0;
  uint64_t counted = 0;
  for (uint64_t i = keys; i < keys + 200; ++i) {
    DhtWrite add{.mode = DhtWrite::Mode::kAdd, .flags = uint32_t(i), .key = Key(i), .value = Value(i, SizeOf(i))};
    auto r = dht->Put(add);
    if (!r.ok() && failed++ < 5) std::printf("dht: add %s: %s\n", Key(i).c_str(), fox::ErrorName(r.error()));
    auto n = dht->Add("died:counter", 1);
    if (!n.ok() && failed++ < 5) std::printf("dht: add to died:counter: %s\n", fox::ErrorName(n.error()));
    counted += n.ok();
  }
  auto count = dht->Get("died:counter");
  std::printf("dht: 200 keys added while node %u died: %llu failed; a counter added to %llu times reads %s\n", victim,
              (unsigned long long)failed, (unsigned long long)counted, count.ok() ? count->value.c_str() : "nothing");
  CHECK(failed == 0 && count.ok() && count->value == std::to_string(counted));
  Tally after = ReadAll(dht, 0, keys + 200, kBig);
  std::printf("dht: node %u killed: read %llu of %llu keys back from node %u, %llu missing, %llu wrong, %llu ms\n",
              victim, (unsigned long long)after.ok, (unsigned long long)(keys + 200 + kBig), fox::am::Self(),
              (unsigned long long)after.missing, (unsigned long long)after.wrong,
              (unsigned long long)((fox::clock::NowNs() - t0) / 1'000'000));
  CHECK(after.ok == keys + 200 + kBig);
  CHECK(WaitUntil(20'000, [&] { return dht->epoch() >= 1; }));

  // The smaller ring takes writes.
  failed = 0;
  for (uint64_t i = keys + 200; i < keys + 400; ++i) failed += !dht->Set(Key(i), Value(i, SizeOf(i)), uint32_t(i)).ok();
  Tally more = ReadAll(dht, keys + 200, 200, 0);
  std::printf("dht: after the death: 200 more keys set (%llu failed) and %llu read back\n", (unsigned long long)failed,
              (unsigned long long)more.ok);
  CHECK(failed == 0 && more.ok == 200);

  uint64_t expected = keys + 400 + kBig + 3;  // and "add", "cas", "died:counter"
  bool full = WaitUntil(20'000, [&] {
    auto s = dht->stats();
    return s.rebuilds_running == 0 && s.live == expected;
  });
  auto s = dht->stats();
  std::printf(
      "dht: node %u holds %llu live items of %llu after the rebuild (%llu copies sent, %llu failed; %llu calls "
      "retried, %llu refused here as not primary, %llu writes re-sent after a replica died)\n",
      fox::am::Self(), (unsigned long long)s.live, (unsigned long long)expected, (unsigned long long)s.rebuilt,
      (unsigned long long)s.rebuild_failures, (unsigned long long)s.retries, (unsigned long long)s.not_primary,
      (unsigned long long)s.resent);
  CHECK(full);
  // What `fox status` shows: the Dht's counters in each survivor's report.
  for (NodeId n : fox::am::Peers()) {
    if (n == victim) continue;
    auto report = fox::ebb::Messenger::Get()->QueryStatus(n).Block();
    CHECK(report.ok());
    size_t at = report->find("dht.live ");
    CHECK(at != std::string::npos);
    std::printf("dht: node %u's status report: %s\n", n, report->substr(at, report->find('\n', at) - at).c_str());
  }
  for (NodeId n : fox::am::Peers()) {
    if (n != victim) Control(n, kQuit, expected);
  }
  SleepMs(300);  // let the quit messages be acknowledged
}

}  // namespace

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

// /proc/PID/stat's state letter: 'Z' (ended, not yet reaped), '?' (gone).
char ProcessState(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", int(pid));
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return '?';
  char state = '?';
  if (std::fscanf(f, "%*d (%*[^)]) %c", &state) != 1) state = '?';
  std::fclose(f);
  return state;
}

std::atomic<int64_t> g_zombie_pid{0};
std::atomic<bool> g_zombie_ready{false};

// Rebalancing: nodes 0-2 run the Dht (r = 2); node 0 sets KEYS keys, tells
// node 3 to join and sets KEYS/2 more while it does, then 100 after. Every
// key must read back, and every node must hold a copy of every key it owns
// in the ring of 4 and of none it does not (the join moved them).
int JoinTest(Dht* dht, uint64_t keys, bool kill) {
  NodeId self = fox::am::Self();
  fox::ebb::RingConfig ring;
  ring.replication = 2;
  std::vector<NodeId> members{0, 1, 2};
  if (self == 3) {
    CHECK(WaitForNode0(120'000, [] { return g_join_go.load(); }));
    uint64_t t0 = fox::clock::NowNs();
    auto r = dht->Join(ring, members);
    if (!r.ok()) std::printf("dht_join: node 3 could not join: %s\n", fox::ErrorName(r.error()));
    CHECK(r.ok());
    std::printf("dht_join: node 3 joined in %llu ms, %llu items streamed to it\n",
                (unsigned long long)((fox::clock::NowNs() - t0) / 1'000'000), (unsigned long long)dht->stats().items);
  } else {
    CHECK(dht->Start(ring, members).ok());
  }
  if (self == 0) {
    auto set = [&](uint64_t from, uint64_t to) {
      uint64_t failed = 0;
      for (uint64_t i = from; i < to; ++i) failed += !dht->Set(Key(i), Value(i, SizeOf(i)), uint32_t(i)).ok();
      CHECK(failed == 0);
    };
    set(0, keys);
    if (kill) Control(1, kDie, 0);  // a member dies as the join starts
    Control(3, kJoinGo, 0);
    set(keys, keys + keys / 2);  // while node 3 joins
    CHECK(WaitUntil(120'000, [&] { return dht->stats().joins >= 1; }));
    uint64_t total = keys + keys / 2 + 100;
    set(keys + keys / 2, total);
    Tally t = ReadAll(dht, 0, total, 0);
    std::printf("dht_join: node 0: %llu of %llu keys read back after node 3 joined, %llu missing, %llu wrong\n",
                (unsigned long long)t.ok, (unsigned long long)total, (unsigned long long)t.missing,
                (unsigned long long)t.wrong);
    CHECK(t.missing == 0 && t.wrong == 0);
    for (NodeId n = kill ? 2 : 1; n < 4; ++n) Control(n, kCheck, total);
    g_check = total;
  }
  CHECK(WaitForNode0(300'000, [] { return g_check.load() != 0; }));
  uint64_t total = g_check.load(), owned = 0, held = 0, stray = 0;
  for (uint64_t i = 0; i < total; ++i) {
    auto owners = dht->OwnersOf(Key(i));
    bool owner = std::find(owners.begin(), owners.end(), self) != owners.end();
    bool holds = dht->HoldsCopy(Key(i));
    owned += owner;
    held += owner && holds;
    stray += !owner && holds;
  }
  auto s = dht->stats();
  std::printf(
      "dht_join: node %u: holds %llu of the %llu keys it owns, %llu it does not own (%llu dropped, %llu writes"
      " fenced)\n",
      self, (unsigned long long)held, (unsigned long long)owned, (unsigned long long)stray,
      (unsigned long long)s.released, (unsigned long long)s.fenced);
  CHECK(held == owned && owned > 0 && stray == 0);
  SleepMs(500);  // the others' checks are local; let the last acks go
  return 0;
}

int Tombstones(Dht* dht, uint64_t keys) {
  NodeId self = fox::am::Self();
  dht->SetTombstoneGrace(1'000'000'000);
  auto no_tombstones = [dht] {
    auto s = dht->stats();
    return s.items == s.live;
  };
  if (self == 0) {
    uint64_t failed = 0;
    for (uint64_t i = 0; i < keys; ++i) failed += !dht->Set(Key(i), Value(i, SizeOf(i)), uint32_t(i)).ok();
    for (uint64_t i = 0; i < keys; ++i) failed += !dht->Delete(Key(i)).ok();
    CHECK(failed == 0);
    auto s = dht->stats();
    std::printf("dht_tombstones: node 0: %llu keys set and deleted: %llu tombstones here, %llu live\n",
                (unsigned long long)keys, (unsigned long long)(s.items - s.live), (unsigned long long)s.live);
    CHECK(s.items > 0 && s.live == 0);
    for (NodeId n = 1; n < 3; ++n) Control(n, kCheck, keys);
    g_check = keys;
  }
  CHECK(WaitForNode0(120'000, [] { return g_check.load() != 0; }));
  uint64_t t0 = fox::clock::NowNs();
  bool gone = WaitUntil(20'000, no_tombstones);
  auto s = dht->stats();
  std::printf("dht_tombstones: node %u: %s: %llu collected here, %llu entries left (%llu live)\n", self,
              gone ? "no tombstone left" : "tombstones left", (unsigned long long)s.collected,
              (unsigned long long)s.items, (unsigned long long)s.live);
  CHECK(gone && s.items == 0);
  std::printf("dht_tombstones: node %u: collected within %llu ms of the check\n", self,
              (unsigned long long)((fox::clock::NowNs() - t0) / 1'000'000));
  if (self == 0) {
    for (NodeId n = 1; n < 3; ++n) CHECK(WaitUntil(30'000, [n] { return g_expected.load() & (1u << n); }));
    uint64_t half = keys / 2, failed = 0;
    for (uint64_t i = 0; i < half; ++i) {
      auto cas = dht->Set(Key(i), Value(i, SizeOf(i)), uint32_t(i));
      failed += !cas.ok() || *cas != 1;  // versions start over
    }
    uint64_t absent = 0;
    for (uint64_t i = half; i < keys; ++i) absent += dht->Delete(Key(i)).error() == fox::Error::kNotFound;
    Tally t = ReadAll(dht, 0, half, 0);
    uint64_t still_gone = 0;
    for (uint64_t i = half; i < keys; ++i) still_gone += dht->Get(Key(i)).error() == fox::Error::kNotFound;
    std::printf(
        "dht_tombstones: node 0: %llu keys set again at version 1 (%llu failed), %llu of %llu read back; %llu of "
        "%llu deleted ones absent\n",
        (unsigned long long)half, (unsigned long long)failed, (unsigned long long)t.ok, (unsigned long long)half,
        (unsigned long long)still_gone, (unsigned long long)(keys - half));
    CHECK(failed == 0 && t.ok == half && absent == keys - half && still_gone == keys - half);
    for (NodeId n = 1; n < 3; ++n) Control(n, kQuit, half);
    g_quit = true;
  } else {
    Control(0, kCheck, uint64_t(1) << 32 | self);  // collected here
    CHECK(WaitForNode0(120'000, [] { return g_quit.load(); }));
  }
  uint64_t half = keys / 2, owned = 0, held = 0;
  for (uint64_t i = 0; i < keys; ++i) {
    auto owners = dht->OwnersOf(Key(i));
    bool owner = std::find(owners.begin(), owners.end(), self) != owners.end();
    owned += owner && i < half;
    held += dht->HoldsCopy(Key(i));
  }
  s = dht->stats();
  std::printf("dht_tombstones: node %u: holds %llu keys, owns %llu, %llu entries\n", self, (unsigned long long)held,
              (unsigned long long)owned, (unsigned long long)s.items);
  CHECK(held == owned && s.items == owned);
  SleepMs(500);  // the others' checks are local; let the last acks go
  return 0;
}

int Zombie(Dht* dht, uint64_t keys) {
  NodeId self = fox::am::Self();
  if (self == 2) {
    Control(0, kPid, uint64_t(getpid()));
    CHECK(WaitUntil(600'000, [] { return g_quit.load(); }));  // fenced before that
    return 0;
  }
  if (self != 0) {
    CHECK(WaitUntil(600'000, [] { return g_quit.load(); }));
    return 0;
  }
  CHECK(WaitUntil(30'000, [] { return g_zombie_pid.load() != 0; }));
  pid_t zombie = pid_t(g_zombie_pid.load());
  uint64_t failed = 0;
  for (uint64_t i = 0; i < keys; ++i) failed += !dht->Set(Key(i), "before").ok();
  std::printf("dht_zombie: set %llu keys: %llu failed\n", (unsigned long long)keys, (unsigned long long)failed);
  CHECK(failed == 0);
  Control(2, kPause, 0);
  uint64_t paused = fox::clock::NowNs();
  CHECK(WaitUntil(60'000, [] { return fox::am::State(2) == fox::am::PeerState::kDead; }));
  std::printf("dht_zombie: node 2 declared dead %llu ms after it stopped itself\n",
              (unsigned long long)((fox::clock::NowNs() - paused) / 1'000'000));
  for (uint64_t i = 0; i < keys; ++i) failed += !dht->Set(Key(i), "after").ok();
  CHECK(WaitUntil(30'000, [&] { return dht->stats().rebuilds_running == 0; }));
  std::printf("dht_zombie: every key rewritten on the survivors: %llu failed\n", (unsigned long long)failed);
  CHECK(failed == 0);
  kill(zombie, SIGCONT);
  uint64_t resumed = fox::clock::NowNs();
  bool ended = WaitUntil(20'000, [&] { return ProcessState(zombie) == 'Z' || ProcessState(zombie) == '?'; });
  std::printf("dht_zombie: node 2 resumed, %s\n", ended ? "and ended" : "and still runs 20 s later");
  CHECK(ended);
  std::printf("dht_zombie: node 2 ended %llu ms after it resumed\n",
              (unsigned long long)((fox::clock::NowNs() - resumed) / 1'000'000));
  uint64_t fresh = 0, stale = 0, missing = 0;
  for (uint64_t i = 0; i < keys; ++i) {
    auto got = dht->Get(Key(i));
    if (!got.ok()) {
      ++missing;
    } else if (got->value == "after") {
      ++fresh;
    } else {
      ++stale;
    }
  }
  auto ghost = dht->Get("zombie-write");
  std::printf("dht_zombie: %llu keys read back: %llu fresh, %llu stale, %llu missing; the zombie's write: %s\n",
              (unsigned long long)keys, (unsigned long long)fresh, (unsigned long long)stale,
              (unsigned long long)missing, ghost.ok() ? "found" : fox::ErrorName(ghost.error()));
  CHECK(fresh == keys && !ghost.ok() && ghost.error() == fox::Error::kNotFound);
  Control(1, kQuit, 0);
  return 0;
}

namespace {
// A mode's life: dies with the script that started it, starts the
// transport with this program's control messages going to `control`, runs
// `body` (its status), says done.
template <class Control, class Body>
int RunMode(Control control, Body body) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  auto config = fox::am::ConfigFromBootArgs();
  if (!config.ok()) return 2;
  Dht* dht = &*Dht::Get();  // before the transport: its receiver
  CHECK(fox::ebb::Messenger::Get()->Listen(kControl, control).ok());
  if (auto r = fox::am::Start(*config); !r.ok()) return 1;
  int status = body(dht);
  std::printf("dht_node: done\n");
  std::fflush(stdout);
  return status;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::string(argv[1]) == "zombie") {
    uint64_t keys = std::strtoull(argv[2], nullptr, 10);
    g_expected = keys;  // the zombie reads one of them
    auto control = [](NodeId, uint16_t handler, const uint8_t* data, size_t length) {
      if (length != 8) return;
      if (handler == kQuit) {
        g_quit = true;
      } else if (handler == kPid) {
        g_zombie_pid = int64_t(fox::net::wire::Load64(data));
      } else if (handler == kPause) {
        std::printf("dht_zombie: node %u stops itself (SIGSTOP)\n", fox::am::Self());
        std::fflush(stdout);
        kill(getpid(), SIGSTOP);
        // Resumed, still holding its old ring and stale copies: a read of a
        // key it is the primary of must not answer from its stale copy (its
        // lease ran out while it was stopped: dht/local.cc, "Read leases"), and a
        // write must never be acknowledged (its replicas hold this node dead).
        for (uint64_t i = 0; i < g_expected.load(); ++i) {
          if (Dht::Get()->OwnersOf(Key(i)).front() != fox::am::Self()) continue;
          auto got = Dht::Get()->Get(Key(i));
          std::printf("dht_zombie: node %u's read of %s after resuming: %s\n", fox::am::Self(), Key(i).c_str(),
                      !got.ok()                ? fox::ErrorName(got.error())
                      : got->value == "before" ? "READ STALE"
                                               : "fresh");
          std::fflush(stdout);
          break;
        }
        auto r = Dht::Get()->Set("zombie-write", "stale");
        std::printf("dht_zombie: node %u's write after resuming: %s\n", fox::am::Self(),
                    r.ok() ? "ACKNOWLEDGED" : fox::ErrorName(r.error()));
        std::fflush(stdout);
      }
    };
    return RunMode(control, [keys](Dht* dht) {
      (void)StartDht(dht, 2);
      return Zombie(dht, keys);
    });
  }
  if (argc >= 3 && std::string(argv[1]) == "tombstones") {
    uint64_t keys = std::strtoull(argv[2], nullptr, 10);
    auto control = [](NodeId, uint16_t handler, const uint8_t* data, size_t length) {
      if (length != 8) return;
      uint64_t arg = fox::net::wire::Load64(data);
      if (handler == kQuit) g_quit = true;
      if (handler == kCheck && arg >> 32 == 0) g_check = arg;
      if (handler == kCheck && arg >> 32 == 1) g_expected |= uint64_t(1) << (arg & 31);
    };
    return RunMode(control, [keys](Dht* dht) {
      (void)StartDht(dht, 2);
      return Tombstones(dht, keys);
    });
  }
  if (argc >= 3 && std::string(argv[1]) == "join") {
    uint64_t keys = std::strtoull(argv[2], nullptr, 10);
    bool kill_member = argc > 3 && std::string(argv[3]) == "kill";
    auto control = [](NodeId, uint16_t handler, const uint8_t* data, size_t length) {
      if (length != 8) return;
      if (handler == kJoinGo) g_join_go = true;
      if (handler == kDie) {
        std::printf("dht_join: node %u dies now\n", fox::am::Self());
        std::fflush(stdout);
        std::_Exit(9);
      }
      if (handler == kCheck) g_check = fox::net::wire::Load64(data);
    };
    return RunMode(control, [keys, kill_member](Dht* dht) { return JoinTest(dht, keys, kill_member); });
  }
  if (argc >= 3 && std::string(argv[1]) == "sync") {
    uint64_t rounds = std::strtoull(argv[2], nullptr, 10);
    uint32_t r = argc > 3 ? uint32_t(std::strtoul(argv[3], nullptr, 10)) : 2;
    auto quit = [](NodeId, uint16_t handler, const uint8_t*, size_t length) {
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
  if (argc < 4) {
    std::printf(
        "usage: dht_node CLIENT VICTIM KEYS [R] | dht_node sync ROUNDS [R] | dht_node zombie KEYS | dht_node join "
        "KEYS [kill] | dht_node tombstones KEYS\n");
    return 2;
  }
  NodeId client = NodeId(std::strtoul(argv[1], nullptr, 10));
  NodeId victim = NodeId(std::strtoul(argv[2], nullptr, 10));
  uint64_t keys = std::strtoull(argv[3], nullptr, 10);
  uint32_t r = argc > 4 ? uint32_t(std::strtoul(argv[4], nullptr, 10)) : 2;
  // Dies with the script that started it, however that ends (a CTest
  // timeout kills the script, not its children).
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  auto config = fox::am::ConfigFromBootArgs();
  if (!config.ok()) return 2;
  Dht* dht = &*Dht::Get();
  auto control = [victim](NodeId, uint16_t handler, const uint8_t* data, size_t length) {
    if (handler == kDie && fox::am::Self() == victim) {
      std::printf("dht_node: node %u dies now (SIGKILL)\n", fox::am::Self());
      std::fflush(stdout);
      kill(getpid(), SIGKILL);
    } else if (handler == kQuit && length == 8) {
      g_expected = fox::net::wire::Load64(data);
      g_quit = true;
    }
  };
  CHECK(fox::ebb::Messenger::Get()->Listen(kControl, control).ok());
  auto started = fox::am::Start(*config);
  if (!started.ok()) {
    std::printf("dht_node: cannot start the transport: %s\n", fox::ErrorName(started.error()));
    return 1;
  }
  auto peers = StartDht(dht, r);
  std::printf("dht_node: node %u ready, %zu peers\n", fox::am::Self(), peers.size());
  std::fflush(stdout);
  if (fox::am::Self() == client) {
    Client(dht, victim, keys);
  } else {
    CHECK(WaitUntil(600'000, [] { return g_quit.load(); }));
    auto s = dht->stats();
    std::printf(
        "dht: node %u holds %llu live items of %llu (served %llu gets, %llu writes; %llu states replicated "
        "here; rebuild: %llu copies sent, %llu failed; %llu writes re-sent after a replica died; %llu bad "
        "requests)\n",
        fox::am::Self(), (unsigned long long)s.live, (unsigned long long)g_expected.load(),
        (unsigned long long)s.served_gets, (unsigned long long)s.served_writes, (unsigned long long)s.replicated,
        (unsigned long long)s.rebuilt, (unsigned long long)s.rebuild_failures, (unsigned long long)s.resent,
        (unsigned long long)s.bad_requests);
    CHECK(s.live == g_expected.load() && s.rebuilds_running == 0);
    // What the shards replaced is freed once no read holds it, at the
    // latest when their cores go idle: each core is woken (an empty event)
    // and sleeps again until nothing waits.
    bool freed = WaitUntil(10'000, [] {
      for (int core = 0; core < fox::core::Online(); ++core) fox::event::SpawnRemote(core, [] {});
      return fox::ebb::ObjectsAwaitingReclaim() == 0;
    });
    std::printf("dht: node %u: %s\n", fox::am::Self(),
                freed ? "every replaced item freed" : "replaced items left unfreed");
  }
  ReportShards(dht);
  std::printf("dht_node: done\n");
  std::fflush(stdout);
  return 0;
}
