// pi: a Monte Carlo estimate of pi over every place of an APGAS job, which
// survives the death of any place but place 0 (Resilient X10's
// ResilientMontePi, in fox's APGAS runtime: fox/apgas/apgas.h).
//
//   fox run pi [--places N] -- [samples=N] [chunks=K] [seed=S]
//
// Place 0 cuts the samples into K chunks and deals them out in rounds, one
// `at` per chunk, to every live place (itself included). A chunk whose place
// dies before answering (DeadPlaceException) is dealt again in the next
// round, to the places still alive. Every chunk draws from a generator seeded
// by its own index, so the hits do not depend on which place counted a
// chunk: a run in which places die prints the same count as one in which
// none does. Exit status 0; 2 for bad arguments; 1 when place 0 fails.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fox/apgas/apgas.h"

namespace {

using fox::apgas::Place;

struct Args {
  uint64_t samples = 20'000'000;
  uint64_t chunks = 64;
  uint64_t seed = 1;
};

// key=value arguments, each a decimal number in [lo, hi]; false (and a
// message) for anything else.
bool ParseArgs(int argc, char** argv, Args* a) {
  struct Key {
    const char* name;
    uint64_t* value;
    uint64_t lo, hi;
  } keys[] = {{"samples", &a->samples, 1, uint64_t(1) << 40},
              {"chunks", &a->chunks, 1, 1 << 20},
              {"seed", &a->seed, 0, UINT64_MAX}};
  for (int i = 1; i < argc; ++i) {
    const char* eq = std::strchr(argv[i], '=');
    Key* key = nullptr;
    for (Key& k : keys) {
      if (eq != nullptr && size_t(eq - argv[i]) == std::strlen(k.name) &&
          std::strncmp(argv[i], k.name, eq - argv[i]) == 0)
        key = &k;
    }
    char* end = nullptr;
    errno = 0;
    unsigned long long v = key != nullptr && eq[1] >= '0' && eq[1] <= '9' ? std::strtoull(eq + 1, &end, 10) : 0;
    if (key == nullptr || end == nullptr || *end != '\0' || errno != 0 || v < key->lo || v > key->hi) {
      std::printf("pi: bad argument '%s': expected samples=N (1..2^40), chunks=K (1..2^20) or seed=S\n", argv[i]);
      return false;
    }
    *key->value = v;
  }
  if (a->chunks > a->samples) {
    std::printf("pi: chunks=%" PRIu64 " is more than samples=%" PRIu64 "\n", a->chunks, a->samples);
    return false;
  }
  return true;
}

uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Points (x, y) of 31-bit coordinates inside the quarter circle of radius
// 2^31, out of `n` drawn from `seed`: integers, so that every place counts
// the same.
uint64_t CountHits(uint64_t seed, uint64_t n) {
  uint64_t state = seed, hits = 0;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t r = SplitMix64(&state);
    uint64_t x = r & 0x7FFFFFFF, y = (r >> 32) & 0x7FFFFFFF;
    hits += x * x + y * y < (uint64_t(1) << 62);
  }
  return hits;
}

void Estimate(const Args& a) {
  size_t chunks = a.chunks;
  std::vector<uint64_t> hits(chunks, 0);
  std::vector<uint8_t> done(chunks, 0);
  std::atomic<size_t> counted{0};
  std::vector<uint32_t> dead;  // the places whose deaths cost chunks, in order
  size_t redealt = 0, rounds = 0, places = 0;
  for (;;) {
    std::vector<size_t> todo;
    for (size_t c = 0; c < chunks; ++c) {
      if (!done[c]) todo.push_back(c);
    }
    if (todo.empty()) break;
    std::vector<Place> live;
    for (Place p : fox::apgas::places()) {
      if (!fox::apgas::isDead(p)) live.push_back(p);
    }
    if (rounds == 0) places = live.size();
    ++rounds;
    try {
      fox::apgas::finish([&] {
        for (size_t k = 0; k < todo.size(); ++k) {
          size_t c = todo[k];
          Place p = live[k % live.size()];
          uint64_t n = a.samples / chunks + (c < a.samples % chunks ? 1 : 0);
          fox::apgas::async([&, c, p, n] {
            try {
              hits[c] = fox::apgas::at(
                  p, [](uint64_t s, uint64_t m) { return CountHits(s, m); }, a.seed * 0x100000001B3ull + c, n);
              done[c] = 1;
              size_t now = counted.fetch_add(1) + 1;
              if (now % std::max<size_t>(1, chunks / 8) == 0 || now == chunks)
                std::printf("pi: %zu of %zu chunks counted\n", now, chunks);
            } catch (const fox::apgas::DeadPlaceException&) {
              // not done: dealt again in the next round
            }
          });
        }
      });
    } catch (const fox::apgas::MultipleExceptions& e) {
      // The deaths that cost chunks (their `at`s caught them) are reported
      // again here, to the finish the dead places took part in; anything
      // else is the program's failure.
      if (e.DeadPlaces() != e.exceptions().size()) throw;
    }
    size_t n_lost = 0;
    for (size_t c : todo) n_lost += !done[c];
    if (n_lost == 0) continue;
    for (Place p : live) {
      if (fox::apgas::isDead(p) && std::find(dead.begin(), dead.end(), p.id) == dead.end()) {
        dead.push_back(p.id);
        std::printf("pi: place %u died; its chunks are dealt again\n", p.id);
      }
    }
    redealt += n_lost;
  }
  uint64_t total = 0;
  for (uint64_t h : hits) total += h;
  std::string deaths = "no place died";
  if (!dead.empty()) {
    deaths = std::to_string(redealt) + " chunks dealt again after the death of place";
    deaths += dead.size() == 1 ? " " : "s ";
    for (size_t i = 0; i < dead.size(); ++i) deaths += (i == 0 ? "" : ", ") + std::to_string(dead[i]);
  }
  std::printf("pi: %.9f from %" PRIu64 " hits of %" PRIu64 " samples (%zu chunks over %zu places in %zu round%s; %s)\n",
              4.0 * double(total) / double(a.samples), total, a.samples, chunks, places, rounds, rounds == 1 ? "" : "s",
              deaths.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!ParseArgs(argc, argv, &args)) return 2;
  return fox::apgas::Main(argc, argv, [args] { Estimate(args); });
}
