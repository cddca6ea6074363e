// MulticoreEbb: one representative per core, one root per node.
#include "fox/ebb/multicore_ebb.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ebb_test_util.h"
#include "fox/core.h"
#include "fox/ebb/ebb.h"

namespace fox::ebb {
namespace {

// Cores besides core 0 that race in these tests.
int Cores() { return std::min(8, testing::WorkerCores()); }

std::atomic<int> g_roots{0};
std::atomic<int> g_reps{0};
std::atomic<int> g_roots_freed{0};
std::atomic<int> g_reps_freed{0};

struct CounterRoot {
  // Slow on purpose, so that the other cores fault while it runs.
  CounterRoot() : CounterRoot(0) { testing::SlowDown(); }
  explicit CounterRoot(int start) : start(start) { g_roots.fetch_add(1); }
  ~CounterRoot() { g_roots_freed.fetch_add(1); }
  int start;
  std::atomic<int> reps_made{0};
};

class Counter : public MulticoreEbb<Counter, CounterRoot> {
 public:
  explicit Counter(CounterRoot& root) : root_(root), core_(core::Current()) {
    root.reps_made.fetch_add(1);
    g_reps.fetch_add(1);
  }
  ~Counter() { g_reps_freed.fetch_add(1); }
  void Increment() { count_.store(count_.load() + 1); }
  int count() const { return count_.load(); }
  int core() const { return core_; }
  CounterRoot& root() const { return root_; }

 private:
  CounterRoot& root_;
  const int core_;
  std::atomic<int> count_{0};
};

TEST(MulticoreEbb, EachCoreGetsItsOwnRepBuiltFromTheRoot) {
  int roots = g_roots.load();
  EbbRef<Counter> counter = Counter::Create(100);
  EXPECT_EQ(g_roots.load(), roots + 1);
  EXPECT_EQ(counter->core(), 0);
  EXPECT_EQ(counter->root().start, 100);

  const int kCores = Cores();
  std::vector<std::atomic<Counter*>> reps(kCores + 1);
  testing::RunOnCores(1, kCores, [&](int core) {
    for (int i = 0; i < core; ++i) counter->Increment();
    reps[core] = counter.Get();
    EXPECT_EQ(counter->core(), core);
  });
  for (int a = 1; a <= kCores; ++a) {
    for (int b = a + 1; b <= kCores; ++b) EXPECT_NE(reps[a].load(), reps[b].load());
  }
  EXPECT_EQ(&Counter::GetRoot(counter.id()), &counter->root());
  EXPECT_EQ(Counter::GetRoot(counter.id()).reps_made.load(), kCores + 1);

  int sum = 0;
  int seen = 0;
  Counter::ForEachRep(counter.id(), [&](int core, Counter& rep) {
    EXPECT_EQ(rep.core(), core);
    sum += rep.count();
    ++seen;
  });
  EXPECT_EQ(seen, kCores + 1);
  EXPECT_EQ(sum, kCores * (kCores + 1) / 2);
  Destroy(counter);
  QuiescentPoint();
}

TEST(MulticoreEbb, SimultaneousFirstTouchMakesOneRootAndOneRepPerCore) {
  const int kCores = Cores();
  for (int round = 0; round < 25; ++round) {
    EbbRef<Counter> counter(testing::FreshStaticId("test.multicore.race." + std::to_string(round)));
    int roots = g_roots.load();
    int reps = g_reps.load();
    std::vector<uint64_t> misses(kCores + 1);
    for (int c = 1; c <= kCores; ++c) misses[c] = GetCoreStats(c).rep_misses;
    std::vector<std::atomic<Counter*>> first(kCores + 1);

    testing::RunOnCores(1, kCores, [&](int core) {
      first[core] = counter.Get();
      for (int i = 0; i < 100; ++i) {
        counter->Increment();
        EXPECT_EQ(counter.Get(), first[core].load());
      }
    });

    ASSERT_EQ(g_roots.load(), roots + 1) << "round " << round;
    ASSERT_EQ(g_reps.load(), reps + kCores) << "round " << round;
    for (int c = 1; c <= kCores; ++c) {
      EXPECT_EQ(first[c].load()->core(), c);
      EXPECT_EQ(first[c].load()->count(), 100);
      EXPECT_EQ(GetCoreStats(c).rep_misses, misses[c] + 1);
    }
    int cores = 0;
    Counter::ForEachRep(counter.id(), [&](int, Counter&) { ++cores; });
    EXPECT_EQ(cores, kCores);
    Destroy(counter);
  }
  QuiescentPoint();
}

// A root that builds reps itself.
struct PoolRoot;
class Pool : public MulticoreEbb<Pool, PoolRoot> {
 public:
  Pool(int slots, int core) : slots(slots), core(core) {}
  int slots;
  int core;
};
struct PoolRoot {
  explicit PoolRoot(int slots_per_core) : slots_per_core(slots_per_core) {}
  std::unique_ptr<Pool> CreateRep() {
    calls.fetch_add(1);
    return std::make_unique<Pool>(slots_per_core, core::Current());
  }
  int slots_per_core;
  std::atomic<int> calls{0};
};

TEST(MulticoreEbb, RootCreateRepIsUsedWhenPresent) {
  EbbRef<Pool> pool = Pool::Create(16);
  EXPECT_EQ(pool->slots, 16);
  testing::RunOnCores(1, 3, [&](int core) { EXPECT_EQ(pool->core, core); });
  EXPECT_EQ(Pool::GetRoot(pool.id()).calls.load(), 4);
  Destroy(pool);
  QuiescentPoint();
}

std::atomic<int> g_fragile_attempts{0};
struct FragileRoot {};
class Fragile : public MulticoreEbb<Fragile, FragileRoot> {
 public:
  explicit Fragile(FragileRoot&) {
    if (g_fragile_attempts.fetch_add(1) == 0) throw std::runtime_error("no memory today");
  }
  int ok = 1;
};

TEST(MulticoreEbb, ARepConstructorThatThrowsInstallsNothing) {
  g_fragile_attempts = 0;
  EbbRef<Fragile> fragile = Fragile::Create();
  EXPECT_THROW(fragile.Get(), std::runtime_error);
  EXPECT_EQ(fragile.LocalRepOrNull(), nullptr);
  EXPECT_EQ(fragile->ok, 1);
  EXPECT_EQ(g_fragile_attempts.load(), 2);
  Destroy(fragile);
  QuiescentPoint();
}

TEST(MulticoreEbb, ASharedAndAMulticoreTypeDoNotMix) {
  struct Plain : SharedEbb<Plain> {};
  EbbId id = testing::FreshStaticId("test.multicore.mixed");
  EbbRef<Counter> counter = Counter::CreateAt(id, 1);
  EXPECT_THROW(EbbRef<Plain>(id).Get(), EbbTypeError);
  EXPECT_EQ(counter->root().start, 1);
  Destroy(counter);
  QuiescentPoint();
}

}  // namespace
}  // namespace fox::ebb
