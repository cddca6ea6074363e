// apgas_node steps delegate and delegate_kill (apgas_node.cc says what they
// check): global arrays and delegate operations.
#include <string>
#include <vector>

#include "fox/apgas/delegate.h"
#include "fox/apgas/global_memory.h"
#include "fox/clock.h"

#include "common.h"

namespace apgas_node {
namespace {

using fox::apgas::GlobalArray;
namespace delegate = fox::apgas::delegate;

// Words of the contention array: what each worker does to them.
constexpr uint64_t kFetchAdd = 0, kCas = 1, kCall = 2, kCallAsync = 3, kXor = 4, kBefores = 5, kFirstAsync = 6;

// One worker's part of the contention test (`k` operations of each kind).
void Contend(uint64_t worker, GlobalArray<int64_t> a, uint64_t k) {
  int64_t befores = 0;
  for (uint64_t i = 0; i < k; ++i) {
    befores += delegate::fetch_add(a[kFetchAdd], int64_t(1));
    for (int64_t seen = delegate::read(a[kCas]);;) {  // an increment by compare-and-swap
      int64_t was = delegate::compare_exchange(a[kCas], seen, seen + 1);
      if (was == seen) break;
      seen = was;
    }
    (void)delegate::call(
        a[kCall], [](int64_t& x, int64_t d) noexcept { return x += d; }, int64_t(1));
    delegate::call_async(
        a[kCallAsync], [](int64_t& x, int64_t d) noexcept { x += d; }, int64_t(2));
    for (uint64_t j = kFirstAsync; j < a.size(); ++j) delegate::add_async(a[j], int64_t(1));
    // Twice the worker's bit: the word ends where it began.
    delegate::xor_async(a[kXor], int64_t(1) << (worker % 62));
    (void)delegate::fetch_xor(a[kXor], int64_t(1) << (worker % 62));
  }
  delegate::add_async(a[kBefores], befores);
}

}  // namespace

void Delegates() {
  std::vector<Place> live;
  for (Place p : fox::apgas::places()) {
    if (!fox::apgas::isDead(p)) live.push_back(p);
  }
  const uint64_t n = live.size(), size = 4 * n + 3;
  auto a = GlobalArray<int64_t>::Make(size);
  CHECK(a.size() == size && a.group().size() == n);

  // Round trips, blocking, from place 0; then forall writes at the owners.
  for (uint64_t i = 0; i < size; ++i) delegate::write(a[i], int64_t(i * 7));
  for (uint64_t i = 0; i < size; ++i) CHECK(delegate::read(a[i]) == int64_t(i * 7));
  fox::apgas::forall(a, [](uint64_t i, int64_t& x) { x = int64_t(i) + 1000; });
  for (uint64_t i = 0; i < size; ++i) CHECK(delegate::read(a[i]) == int64_t(i) + 1000);
  fox::apgas::forall(a, [](uint64_t, int64_t& x) { x = 0; });

  // Contention: workers at every place, on every activity core.
  const uint64_t workers = 3 * n, k = 40;
  uint64_t t0 = fox::clock::NowNs();
  fox::apgas::forall(
      0, workers, {}, [](uint64_t w, GlobalArray<int64_t> a, uint64_t k) { Contend(w, a, k); }, a, k);
  uint64_t ms = (fox::clock::NowNs() - t0) / 1'000'000;
  const int64_t total = int64_t(workers * k);
  CHECK(delegate::read(a[kFetchAdd]) == total);
  CHECK(delegate::read(a[kCas]) == total);
  CHECK(delegate::read(a[kCall]) == total);
  CHECK(delegate::read(a[kCallAsync]) == 2 * total);
  CHECK(delegate::read(a[kXor]) == 0);
  CHECK(delegate::read(a[kBefores]) == total * (total - 1) / 2);  // every fetch_add saw a distinct value
  for (uint64_t j = kFirstAsync; j < size; ++j) CHECK(delegate::read(a[j]) == total);
  auto s = delegate::stats();
  std::printf(
      "apgas: delegates: %llu workers over %llu places, %lld of each operation on shared words: exact "
      "(%llu ms; place 0 sent %llu batches of %llu operations)\n",
      (unsigned long long)workers, (unsigned long long)n, (long long)total, (unsigned long long)ms,
      (unsigned long long)s.batches_sent, (unsigned long long)s.ops_sent);

  // Floating point add, and what is refused.
  auto d = GlobalArray<double>::Make(n);
  fox::apgas::forall(
      0, 64, {}, [](uint64_t, GlobalArray<double> d) { delegate::add_async(d[d.size() - 1], 0.5); }, d);
  CHECK(delegate::read(d[n - 1]) == 32.0);
  bool out_of_range = false;
  try {
    (void)delegate::read(a[size]);
  } catch (const std::out_of_range&) {
    out_of_range = true;
  }
  CHECK(out_of_range);
  auto gone = a[size - 1];
  a.Destroy();
  std::string refused;
  try {
    (void)delegate::read(gone);
  } catch (const std::runtime_error& e) {
    refused = e.what();
  }
  CHECK(refused.find("no such array") != std::string::npos);
  bool async_refused = false;
  try {
    fox::apgas::finish([&] { delegate::add_async(gone, int64_t(1)); });
  } catch (const fox::apgas::MultipleExceptions& m) {
    async_refused = m.exceptions().size() == 1 && std::string(m.what()).find("no such array") != std::string::npos;
  }
  CHECK(async_refused);
  d.Destroy();
  std::printf("apgas: delegates: double add exact, out of range and destroyed arrays refused: PASS\n");
}

void DelegateKill(uint32_t victim) {
  auto a = GlobalArray<int64_t>::Make(1 << 12);
  const uint64_t per_place = a.block();
  uint64_t t0 = fox::clock::NowNs();
  bool named = false;
  size_t others = 0;
  try {
    fox::apgas::finish([&] {
      fox::apgas::asyncAt(Place{victim}, [] { DieIn(300); });
      fox::apgas::forall(
          0, 4 * a.group().size(), {},
          [](uint64_t w, GlobalArray<int64_t> a, uint32_t victim) {
            // Until the victim is dead (or 60 s): asynchronous adds
            // everywhere, a blocking one now and then.
            uint64_t x = w * 0x9E3779B97F4A7C15ull + 1, start = fox::clock::NowNs();
            for (uint64_t round = 0; !fox::apgas::isDead(Place{victim}); ++round) {
              x ^= x << 13, x ^= x >> 7, x ^= x << 17;
              delegate::add_async(a[x % a.size()], int64_t(1));
              if (round % 64 == 0) {
                try {
                  (void)delegate::fetch_add(a[(x >> 20) % a.size()], int64_t(1));
                } catch (const fox::apgas::DeadPlaceException&) {
                  break;
                }
                if (fox::clock::NowNs() - start > 60'000'000'000ull) break;
              }
            }
          },
          a, victim);
    });
  } catch (const fox::apgas::MultipleExceptions& m) {
    named = m.HasDeadPlace(Place{victim});
    others = m.exceptions().size() - m.DeadPlaces();
    if (others != 0) std::printf("apgas: the finish threw: %s\n", m.what());
  }
  if (!named) std::printf("apgas: the finish did not name place %u\n", victim);
  uint64_t ms = (fox::clock::NowNs() - t0) / 1'000'000;
  CHECK(named && others == 0);
  // The victim's block is gone; every other block still answers.
  bool dead_threw = false;
  uint64_t answered = 0;
  for (size_t k = 0; k < a.group().size(); ++k) {
    try {
      (void)delegate::read(a[k * per_place]);
      ++answered;
    } catch (const fox::apgas::DeadPlaceException& e) {
      dead_threw = e.place() == Place{victim};
    }
  }
  CHECK(dead_threw && answered == a.group().size() - 1);
  std::printf(
      "apgas: delegates to place %u, dead: DeadPlaceException named it, no other exception, %llu live "
      "blocks answer (%llu ms)\n",
      victim, (unsigned long long)answered, (unsigned long long)ms);
}

}  // namespace apgas_node
