// The BenchMicro patterns of the Resilient X10 report (make bench B=finish,
// tests/bench/finish.py), at every place of a job; place 0 times them:
//   local          finish { N local asyncs }
//   single         finish { asyncAt(next place) }
//   fanout         finish { asyncAt(p, {}) for every place p } (a message back: the finish's own report)
//   fanout_back    finish { at every place p: asyncAt(0, {}) }: an explicit message back
//   fanout_local   finish { at every place p: N local asyncs }
//   fanout_fanout  finish { at every place p: asyncAt(q, {}) for every place q }
//   tree           finish { a binary tree of asyncAt over the places }
//   nested         finish { at every place p: finish { asyncAt(next place) } }:
//                  finishes homed away from place 0 (what mode place0 pays for)
// Prints, per pattern, "bench: PATTERN PLACES places: T us per round, A
// activities per second, M messages per remote activity" (M: AM messages
// every place's transport sent during the timed rounds, less what counting
// them costs, over the remote activities spawned).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fox/apgas/apgas.h"
#include "fox/clock.h"
#include "fox/net/am.h"

namespace {
using fox::apgas::Place;
constexpr int kLocal = 32;

void Tree(uint32_t lo, uint32_t hi) {  // places [lo, hi)
  if (hi - lo <= 1) return;
  uint32_t mid = lo + (hi - lo) / 2;
  fox::apgas::asyncAt(
      Place{mid}, [](uint32_t a, uint32_t b) { Tree(a, b); }, mid, hi);
  Tree(lo, mid);
}

// AM messages sent so far by every place's transport.
uint64_t MessagesSent() {
  uint64_t total = 0;
  for (Place p : fox::apgas::places()) {
    total += fox::apgas::at(p, [] { return fox::am::GetStats().endpoint.messages_sent; });
  }
  return total;
}

template <class F>
void Time(const char* name, int rounds, uint64_t activities_per_round, uint64_t remote_per_round, F round) {
  round();  // warm up
  uint64_t before = MessagesSent();
  uint64_t counting = MessagesSent() - before;  // what one count costs
  before += counting;
  uint64_t t0 = fox::clock::NowNs();
  for (int i = 0; i < rounds; ++i) round();
  double us = double(fox::clock::NowNs() - t0) / 1e3 / rounds;
  uint64_t sent = MessagesSent() - before - counting;
  double per_remote = remote_per_round == 0 ? 0 : double(sent) / double(remote_per_round * uint64_t(rounds));
  std::printf(
      "bench: %s %zu places: %.1f us per round, %.0f activities per second, %.2f messages per remote "
      "activity\n",
      name, fox::apgas::places().size(), us, double(activities_per_round) / us * 1e6, per_remote);
}
}  // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 200;
  return fox::apgas::Main(argc, argv, [rounds] {
    auto places = fox::apgas::places();
    uint32_t n = uint32_t(places.size());
    uint64_t r = n - 1;  // remote places, seen from any one
    Time("local", rounds, kLocal, 0, [] {
      fox::apgas::finish([] {
        for (int i = 0; i < kLocal; ++i) fox::apgas::async([] {});
      });
    });
    Time("single", rounds, 1, n > 1 ? 1 : 0,
         [n] { fox::apgas::finish([n] { fox::apgas::asyncAt(Place{1 % n}, [] {}); }); });
    Time("fanout", rounds, n, r, [&] {
      fox::apgas::finish([&] {
        for (Place p : places) fox::apgas::asyncAt(p, [] {});
      });
    });
    Time("fanout_back", rounds, 2 * n, 2 * r, [&] {
      fox::apgas::finish([&] {
        for (Place p : places) fox::apgas::asyncAt(p, [] { fox::apgas::asyncAt(Place{0}, [] {}); });
      });
    });
    Time("fanout_local", rounds, n * (kLocal + 1), r, [&] {
      fox::apgas::finish([&] {
        for (Place p : places) {
          fox::apgas::asyncAt(p, [] {
            for (int i = 0; i < kLocal; ++i) fox::apgas::async([] {});
          });
        }
      });
    });
    Time("fanout_fanout", rounds / 4 + 1, n * (n + 1), r * (n + 1), [&] {
      fox::apgas::finish([&] {
        for (Place p : places) {
          fox::apgas::asyncAt(
              p,
              [](uint32_t count) {
                for (uint32_t q = 0; q < count; ++q) fox::apgas::asyncAt(Place{q}, [] {});
              },
              n);
        }
      });
    });
    Time("tree", rounds, n, r, [n] { fox::apgas::finish([n] { Tree(0, n); }); });
    Time("nested", rounds, 2 * n, r + n, [&] {
      fox::apgas::finish([&] {
        for (Place p : places) {
          fox::apgas::asyncAt(
              p,
              [](uint32_t count) {
                uint32_t next = (fox::apgas::here().id + 1) % count;
                fox::apgas::finish([next] { fox::apgas::asyncAt(Place{next}, [] {}); });
              },
              n);
        }
      });
    });
  });
}
