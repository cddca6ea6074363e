// The Dht's per-core representatives (ebb/include/fox/ebb/dht.h, "Shards"):
// gets and sets per second served by one hosted node of FOX_CORES cores,
// asked by CLIENTS events on every core at once (each one request at a time,
// keys at random among KEYS). tests/bench/dht_cores.py runs it with 1 and 2
// cores and prints the ratio; hosted, and (--native) as a compute node under
// QEMU (the image bench_dht_cores, on QEMU's user network).
//
//   FOX_ARGS="fox.node=0 fox.amport=P fox.peers=0@127.0.0.1:P" dht_cores SECONDS CLIENTS KEYS
//   bench_dht_cores.elf: fox.kcores=N fox.dht_cores=N fox.node=0 fox.peers=0@10.0.2.15 -- SECONDS CLIENTS KEYS
//
// Prints "dht_cores: C cores: G gets/s, S sets/s, requests served on N cores".
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "fox/clock.h"
#include "fox/core.h"
#include "fox/ebb/dht.h"
#include "fox/ebb/lifetime.h"
#include "fox/event.h"
#include "fox/future.h"
#include "fox/net/am.h"
#ifdef FOX_NATIVE
#include "fox/net/ip.h"
#endif

namespace {
using fox::ebb::Dht;

std::string Key(uint64_t i) { return "bench:" + std::to_string(i); }

uint64_t Next(uint64_t& state) {  // xorshift64
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

// Every core runs `clients` loops of `op` until `seconds` pass; returns the
// operations per second, or 0 if one failed.
template <class Op>
double Phase(double seconds, int clients, Op op) {
  std::atomic<uint64_t> done{0};
  std::atomic<bool> failed{false};
  uint64_t end = fox::clock::NowNs() + uint64_t(seconds * 1e9);
  std::vector<fox::Future<void>> finished;
  int cores = fox::core::Online();
  uint64_t start = fox::clock::NowNs();
  for (int c = 0; c < cores; ++c) {
    for (int k = 0; k < clients; ++k) {
      auto p = std::make_shared<fox::Promise<void>>();
      finished.push_back(p->GetFuture());
      fox::event::SpawnRemote(c, [&, p, seed = uint64_t(c * 1000 + k + 1) * 0x9E3779B97F4A7C15ull] {
        uint64_t state = seed, n = 0;
        // Every 16 requests the client looks at the clock (under TCG each
        // guest RDTSC takes a lock of QEMU's that every vCPU shares) and
        // lets the core's other events run: requests served inline never
        // block, and a client that kept the core would hold back the
        // requests other cores hand to it (Delegate) until its phase ended.
        for (;; ++n) {
          if ((n & 15) == 0) {
            if (fox::clock::NowNs() >= end) break;
            fox::event::Block([](fox::event::Continuation k) { k.Resume(); });
          }
          if (!op(Next(state))) failed.store(true);
        }
        done.fetch_add(n);
        p->SetValue();
      });
    }
  }
  for (auto& f : finished) f.Block();
  double took = double(fox::clock::NowNs() - start) / 1e9;
  return failed.load() ? 0 : double(done.load()) / took;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: dht_cores SECONDS CLIENTS KEYS\n");
    return 2;
  }
  double seconds = std::atof(argv[1]);
  int clients = std::atoi(argv[2]);
  uint64_t keys = std::strtoull(argv[3], nullptr, 10);
  if (seconds <= 0 || clients < 1 || keys < 1) {
    std::fprintf(stderr, "dht_cores: bad arguments\n");
    return 2;
  }
  auto config = fox::am::ConfigFromBootArgs();
  if (!config.ok()) return 2;
#ifdef FOX_NATIVE
  // On a compute node the transport runs over the node's network.
  if (int status = fox::net::StartFromBootArgs("dht_cores"); status != 0) return status;
#endif
  Dht* dht = &*Dht::Get();  // before the transport: its receivers
  if (auto r = fox::am::Start(*config); !r.ok()) return 1;
  if (auto r = dht->Start(); !r.ok()) return 1;
  std::string value(64, 'v');
  for (uint64_t i = 0; i < keys; ++i) {
    if (!dht->Set(Key(i), value).ok()) return 1;
  }
  double gets = Phase(seconds, clients, [&](uint64_t r) { return dht->Get(Key(r % keys)).ok(); });
  double sets = Phase(seconds, clients, [&](uint64_t r) { return dht->Set(Key(r % keys), value).ok(); });
  auto load = dht->CoreLoad();
  int serving = int(load.size() - std::count(load.begin(), load.end(), 0));
  std::printf("dht_cores: %d cores: %.0f gets/s, %.0f sets/s, requests served on %d cores\n", fox::core::Online(), gets,
              sets, serving);
  auto stats = dht->stats();
  std::printf(
      "dht_cores: %llu gets read from and %llu sets written to another core's shard; %llu replaced items not freed "
      "yet\n",
      (unsigned long long)stats.shared_gets, (unsigned long long)stats.shared_writes,
      (unsigned long long)fox::ebb::ObjectsAwaitingReclaim());
  return gets > 0 && sets > 0 ? 0 : 1;
}
