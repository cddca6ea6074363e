// dht_node CLIENT VICTIM KEYS [R]: failover (dht_node.cc lists the
// scenarios).
//
// The client: checks the store's modes (add, cas, replace, delete, bad
// sizes) and that malformed requests are answered kInvalidArgument, sets KEYS keys of 1 to 5000 bytes and 4 values of 1
// MiB with replication R (default 2), reads them back, has the victim kill itself, reads every key back at once (calls
// in flight to the victim are retried on the new primary), writes and reads more keys on the smaller ring, waits for
// its rebuild, checks it holds every live item (with R = 2 on 3 nodes each survivor holds all after the rebuild), then
// tells the other nodes to check theirs and quit. Any failed check exits 1.
#include <algorithm>
#include <string>

#include "fox/core.h"
#include "fox/ebb/dht_hash.h"
#include "fox/ebb/lifetime.h"
#include "fox/ebb/rpc.h"
#include "fox/event.h"
#include "fox/net/wire.h"

#include "common.h"

namespace dht_node {
namespace {

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
        auto r = fox::ebb::Rpc::Get()->Call(n, ebb, HandlerId{b.handler}, b.body.data(), b.body.size()).Block();
        if (r.ok() && r->size() == 4 && fox::net::wire::Load32(r->data()) == uint32_t(fox::Error::kInvalidArgument)) {
          ++answered;
        }
      }
      // Too short to carry a request id: dropped and counted, not answered.
      CHECK(fox::ebb::Messenger::Get()->SendWait(n, ebb, HandlerId{2}, "abc", 3).ok());
    }
    ++sent;
    auto r = fox::ebb::Rpc::Get()->Call(n, other_shard, HandlerId{1}, "k", 1).Block();
    if (r.ok() && r->size() == 4 && fox::net::wire::Load32(r->data()) == uint32_t(fox::Error::kInvalidArgument)) {
      ++answered;
    }
  }
  std::printf("dht: %llu malformed requests to the peers: %llu answered invalid argument\n", (unsigned long long)sent,
              (unsigned long long)answered);
  CHECK(answered == sent);
  (void)dht;
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

int Failover(int argc, char** argv) {
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
  auto control = [victim](NodeId, HandlerId handler, const uint8_t* data, size_t length) {
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

}  // namespace dht_node
