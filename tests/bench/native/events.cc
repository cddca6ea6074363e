// Event-loop benchmark on a fox node: cross-core spawn latency (ping-pong
// between core 0 and core 1, one-way = round trip / 2) and events per second
// on one core (local spawns) and into one core from another (remote spawns).
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "fox/clock.h"
#include "fox/core.h"
#include "fox/event.h"
#include "fox/future.h"

namespace {

struct PingPong {
  int rounds_left;
  uint64_t start;
  std::shared_ptr<fox::Promise<uint64_t>> done;
};

void Ping(std::shared_ptr<PingPong> s);
void Pong(std::shared_ptr<PingPong> s) {
  fox::event::SpawnRemote(0, [s] { Ping(s); });
}
void Ping(std::shared_ptr<PingPong> s) {
  if (--s->rounds_left == 0) {
    s->done->SetValue(fox::clock::NowNs() - s->start);
    return;
  }
  fox::event::SpawnRemote(1, [s] { Pong(s); });
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 100000;
  long events = argc > 2 ? std::atol(argv[2]) : 2000000;
  if (fox::core::Online() < 2) return 2;

  auto pp =
      std::make_shared<PingPong>(PingPong{rounds + 1, fox::clock::NowNs(), std::make_shared<fox::Promise<uint64_t>>()});
  auto rtt_done = pp->done->GetFuture();
  Ping(pp);
  uint64_t ns = rtt_done.Block();
  std::printf("events.cross_core_one_way %.0f ns\n", double(ns) / rounds / 2);

  // Local: one core spawning to itself.
  auto counter = std::make_shared<long>(0);
  uint64_t t0 = fox::clock::NowNs();
  for (long i = 0; i < events; ++i) fox::event::Spawn([counter] { ++*counter; });
  fox::Promise<void> local;
  auto local_done = local.GetFuture();
  auto lp = std::make_shared<fox::Promise<void>>(std::move(local));
  fox::event::Spawn([lp] { lp->SetValue(); });
  local_done.Block();
  uint64_t t1 = fox::clock::NowNs();
  std::printf("events.local_per_second %.0f events/s\n", double(*counter) * 1e9 / double(t1 - t0));

  // Remote: core 1 spawns `events` events onto core 0.
  auto received = std::make_shared<long>(0);
  auto all = std::make_shared<fox::Promise<void>>();
  auto remote_done = all->GetFuture();
  uint64_t t2 = fox::clock::NowNs();
  fox::event::SpawnRemote(1, [=] {
    for (long i = 0; i < events; ++i) {
      fox::event::SpawnRemote(0, [=] {
        if (++*received == events) all->SetValue();
      });
    }
  });
  remote_done.Block();
  uint64_t t3 = fox::clock::NowNs();
  std::printf("events.remote_per_second %.0f events/s\n", double(events) * 1e9 / double(t3 - t2));
  return 0;
}
