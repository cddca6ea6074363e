// gups: HPCC RandomAccess (GUPS) over every place of an APGAS job, on a
// GlobalArray and asynchronous delegates (fox/apgas/delegate.h).
//
//   fox run gups [--places N] -- [log2=K] [batch=BYTES] [check=on|off]
//
// The rules are HPCC's: a table of 2^K 64-bit words over all places, word i
// starting as i; 4 * 2^K updates, each the next value `ran` of HPCC's
// generator (a shift register with the polynomial x^63 + x^2 + x + 1, period
// 1317624576693539401) XORed into word ran mod 2^K. The stream is cut into
// one contiguous piece per worker (every activity core of every place), each
// starting where the whole stream's sequence is at its first update (the
// generator's jump ahead, Starts). Verification applies the same updates
// again (XOR undoes them) and counts the words that are not back to their
// index: HPCC allows 1% of the table; with delegates, which are atomic at the
// word's home, there are none.
//
// Every update is xor_async to the word's home: the delegates of one core
// to one place travel together in batches of `batch` bytes (default one
// network message; 0: one update per batch, the unaggregated figure; more:
// large messages). Prints the time and GUP/s of the updates, then the
// verification. A place that dies makes the run fail (the table is lost:
// gups is not resilient): a DeadPlaceException naming it, exit status 1.
// Exit status 2 for bad arguments.
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "../common/args.h"
#include "hpcc_random.h"
#include "fox/apgas/apgas.h"
#include "fox/apgas/delegate.h"
#include "fox/apgas/global_memory.h"
#include "fox/clock.h"

namespace {

using fox::apgas::GlobalArray;
using fox::apgas::Place;
using fox::apps::hpcc::Next;
using fox::apps::hpcc::Starts;
namespace delegate = fox::apgas::delegate;

// Worker w of `workers` applies its piece of the stream of `updates`.
void Updates(uint64_t w, GlobalArray<uint64_t> table, uint64_t updates, uint64_t workers) {
  uint64_t first = updates * w / workers, last = updates * (w + 1) / workers;
  uint64_t ran = Starts(int64_t(first)), mask = table.size() - 1;
  for (uint64_t i = first; i < last; ++i) {
    ran = Next(ran);
    delegate::xor_async(table[ran & mask], ran);
  }
}

double Seconds(uint64_t ns) { return double(ns) / 1e9; }

// The run: the table made and filled, the updates timed, then (check)
// applied again and the table verified. Deaths reach main as exceptions.
void Run(bool batch_given, uint64_t batch, uint64_t log2, bool check) {
  std::vector<Place> live;
  for (Place p : fox::apgas::places()) {
    if (!fox::apgas::isDead(p)) live.push_back(p);
  }
  if (batch_given) {
    fox::apgas::finish([&] {
      for (Place p : live) {
        fox::apgas::asyncAt(
            p, [](uint64_t bytes) { delegate::SetBatchBytes(bytes); }, batch);
      }
    });
  }
  const uint64_t size = uint64_t(1) << log2, updates = 4 * size;
  const uint64_t workers = live.size() * uint64_t(std::max(1, fox::apgas::activityCores()));
  auto table = GlobalArray<uint64_t>::Make(size, live);
  fox::apgas::forall(table, [](uint64_t i, uint64_t& word) { word = i; });
  auto run = [&] {
    fox::apgas::forall(
        0, workers, live, [](uint64_t w, GlobalArray<uint64_t> t, uint64_t n, uint64_t k) { Updates(w, t, n, k); },
        table, updates, workers);
  };
  uint64_t t0 = fox::clock::NowNs();
  run();
  uint64_t ns = fox::clock::NowNs() - t0;
  std::printf("gups: table 2^%" PRIu64 " words over %zu places, %" PRIu64 " updates by %" PRIu64
              " workers in %.3f s: %.6f GUP/s (batches of %zu bytes)\n",
              log2, live.size(), updates, workers, Seconds(ns), double(updates) / Seconds(ns) / 1e9,
              delegate::BatchBytes());
  if (check) {
    run();  // the same updates again: XOR undoes them
    uint64_t errors = 0;
    for (Place p : live) {
      errors += fox::apgas::at(
          p,
          [](GlobalArray<uint64_t> t) {
            uint64_t wrong = 0, begin = t.localBegin();
            const uint64_t* words = t.local();
            for (uint64_t j = 0; j < t.localCount(); ++j) wrong += words[j] != begin + j;
            return wrong;
          },
          table);
    }
    bool passed = errors * 100 <= size;  // HPCC: at most 1% of the table
    std::printf("gups: verification: %" PRIu64 " errors in %" PRIu64 " words (%.4f%%): %s\n", errors, size,
                100.0 * double(errors) / double(size), passed ? "PASSED" : "FAILED");
    if (!passed) throw std::runtime_error("gups: verification failed");
  }
  table.Destroy();
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t log2 = 20, batch = UINT64_MAX;  // UINT64_MAX: not given (Args sets only what it reads)
  std::string check = "on";
  fox::apps::Args args("gups");
  args.UInt("log2", &log2, 4, 36).UInt("batch", &batch, 0, 64 << 20).Choice("check", &check, "on|off");
  if (!args.Parse(argc, argv)) return 2;
  return fox::apgas::Main(argc, argv, [=] {
    try {
      Run(batch != UINT64_MAX, batch, log2, check == "on");
    } catch (const fox::apgas::MultipleExceptions& m) {
      if (m.DeadPlaces() == 0) throw;
      std::printf("gups: a place died: %s: the table is lost (gups is not resilient)\n", m.what());
      throw;
    } catch (const fox::apgas::DeadPlaceException& e) {
      std::printf("gups: a place died: %s: the table is lost (gups is not resilient)\n", e.what());
      throw;
    }
  });
}
