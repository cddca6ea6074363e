// The BenchMicro patterns of the Resilient X10 report (make bench B=finish,
// tests/bench/finish.py), at every place of a job; place 0 times them:
//   local          finish { N local asyncs }
//   single         finish { asyncAt(next place) }
//   fanout         finish { asyncAt(p, {}) for every place p } (a message back: the finish's own report)
//   fanout_back    finish { at every place p: asyncAt(0, {}) }: an explicit message back
//   fanout_local   finish { at every place p: N local asyncs }
//   fanout_fanout  finish { at every place p: asyncAt(q, {}) for every place q }
//   tree           finish { a binary tree of asyncAt over the places }
// Prints, per pattern, "bench: PATTERN PLACES places: T us per round, A activities per second".
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fox/apgas/apgas.h"
#include "fox/clock.h"

namespace {
using fox::apgas::Place;
constexpr int kLocal = 32;

void Tree(uint32_t lo, uint32_t hi) {  // places [lo, hi)
  if (hi - lo <= 1) return;
  uint32_t mid = lo + (hi - lo) / 2;
  fox::apgas::asyncAt(Place{mid}, [](uint32_t a, uint32_t b) { Tree(a, b); }, mid, hi);
  Tree(lo, mid);
}

template <class F>
void Time(const char* name, int rounds, uint64_t activities_per_round, F round) {
  round();  // warm up
  uint64_t t0 = fox::clock::NowNs();
  for (int i = 0; i < rounds; ++i) round();
  double us = double(fox::clock::NowNs() - t0) / 1e3 / rounds;
  std::printf("bench: %s %zu places: %.1f us per round, %.0f activities per second\n", name,
              fox::apgas::places().size(), us, double(activities_per_round) / us * 1e6);
}
}  // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 200;
  return fox::apgas::Main(argc, argv, [rounds] {
    auto places = fox::apgas::places();
    uint32_t n = uint32_t(places.size());
    Time("local", rounds, kLocal, [] {
      fox::apgas::finish([] {
        for (int i = 0; i < kLocal; ++i) fox::apgas::async([] {});
      });
    });
    Time("single", rounds, 1, [n] { fox::apgas::finish([n] { fox::apgas::asyncAt(Place{1 % n}, [] {}); }); });
    Time("fanout", rounds, n, [&] {
      fox::apgas::finish([&] {
        for (Place p : places) fox::apgas::asyncAt(p, [] {});
      });
    });
    Time("fanout_back", rounds, 2 * n, [&] {
      fox::apgas::finish([&] {
        for (Place p : places) fox::apgas::asyncAt(p, [] { fox::apgas::asyncAt(Place{0}, [] {}); });
      });
    });
    Time("fanout_local", rounds, n * (kLocal + 1), [&] {
      fox::apgas::finish([&] {
        for (Place p : places) {
          fox::apgas::asyncAt(p, [] {
            for (int i = 0; i < kLocal; ++i) fox::apgas::async([] {});
          });
        }
      });
    });
    Time("fanout_fanout", rounds / 4 + 1, n * (n + 1), [&] {
      fox::apgas::finish([&] {
        for (Place p : places) {
          fox::apgas::asyncAt(p, [](uint32_t count) {
            for (uint32_t q = 0; q < count; ++q) fox::apgas::asyncAt(Place{q}, [] {});
          }, n);
        }
      });
    });
    Time("tree", rounds, n, [n] { fox::apgas::finish([n] { Tree(0, n); }); });
  });
}
