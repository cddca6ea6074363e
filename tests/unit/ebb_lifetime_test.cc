// Destroy and the quiescent-point rule: a destroyed Ebb fails cleanly at once
// and its memory is freed only after every core has let go of it. Run under
// ASan, every test here would report a use of freed memory if the rule were
// broken.
#include "fox/ebb/lifetime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ebb_test_util.h"
#include "fox/core.h"
#include "fox/ebb/ebb.h"

namespace fox::ebb {
namespace {

std::mutex g_log_mu;
std::vector<std::string> g_log;
void Log(const std::string& what) {
  std::lock_guard<std::mutex> lock(g_log_mu);
  g_log.push_back(what);
}
int Count(const std::string& what) {
  std::lock_guard<std::mutex> lock(g_log_mu);
  return static_cast<int>(std::count(g_log.begin(), g_log.end(), what));
}

struct BoxRoot {
  BoxRoot() { Log("root+"); }
  ~BoxRoot() { Log("root-"); }
};

class Box : public MulticoreEbb<Box, BoxRoot> {
 public:
  explicit Box(BoxRoot&) : payload_(new int[64]()) { Log("rep+"); }
  ~Box() {
    delete[] payload_;
    Log("rep-");
  }
  // Touches heap memory owned by the rep, so ASan sees any use after free.
  int Sum() const {
    int sum = 0;
    for (int i = 0; i < 64; ++i) sum += payload_[i];
    return sum;
  }
  void Add(int v) { payload_[v % 64] += v; }
  void DestroySelf(EbbId id) {
    Destroy(id);
    Add(1);  // still ours until this core's next quiescent point
  }

 private:
  int* payload_;
};

TEST(Destroy, LaterAccessThrowsOnEveryCoreAndMemoryIsFreedAfterQuiescence) {
  int reps_before = Count("rep-");
  int roots_before = Count("root-");
  Stats stats = GetStats();
  const int kCores = std::min(4, testing::WorkerCores());
  EbbRef<Box> box = Box::Create();
  box->Add(3);
  testing::RunOnCores(1, kCores, [&](int) { box->Add(1); });
  EXPECT_EQ(GetStats().live_ebbs, stats.live_ebbs + 1);

  Destroy(box);
  EXPECT_EQ(GetStats().live_ebbs, stats.live_ebbs);
  EXPECT_EQ(GetStats().destroyed_ebbs, stats.destroyed_ebbs + 1);
  EXPECT_EQ(box.LocalRepOrNull(), nullptr);
  EXPECT_THROW(box->Sum(), DeadEbbError);
  testing::RunOnCores(1, kCores, [&](int) {
    EXPECT_EQ(box.LocalRepOrNull(), nullptr);
    EXPECT_THROW(box->Sum(), DeadEbbError);
  });
  // Core 0 has not passed a quiescent point since it used the rep.
  EXPECT_EQ(Count("rep-"), reps_before);
  QuiescentPoint();
  EXPECT_EQ(Count("rep-"), reps_before + kCores + 1);
  EXPECT_EQ(Count("root-"), roots_before + 1);
  EXPECT_THROW(box->Sum(), DeadEbbError);
  EXPECT_THROW(Destroy(box), DeadEbbError);
}

TEST(Destroy, RepsAreFreedBeforeTheirRoot) {
  {
    std::lock_guard<std::mutex> lock(g_log_mu);
    g_log.clear();
  }
  EbbRef<Box> box = Box::Create();
  box->Add(1);
  Destroy(box);
  QuiescentPoint();
  std::lock_guard<std::mutex> lock(g_log_mu);
  EXPECT_EQ(g_log, (std::vector<std::string>{"root+", "rep+", "rep-", "root-"}));
}

TEST(Destroy, ACoreInTheMiddleOfACallKeepsItsRepUntilItsQuiescentPoint) {
  EbbRef<Box> box = Box::Create();
  int freed = Count("rep-");
  std::atomic<int> step{0};
  testing::CoreTask user(2, [&] {
    Box* rep = box.Get();  // in the middle of an event that uses the rep
    rep->Add(5);
    step = 1;
    while (step.load() != 2) std::this_thread::yield();
    // Destroyed meanwhile, but this event is not over: the rep is intact.
    EXPECT_EQ(rep->Sum(), 5);
    rep->Add(7);
    EXPECT_THROW(box->Sum(), DeadEbbError);  // a new dereference fails cleanly
    QuiescentPoint();                        // the event ends
    step = 3;
    while (step.load() != 4) std::this_thread::yield();
    EnterQuiescence();
  });
  while (step.load() != 1) std::this_thread::yield();
  Destroy(box);
  QuiescentPoint();  // core 0 is done, core 2 is not
  EXPECT_EQ(Count("rep-"), freed);
  step = 2;
  while (step.load() != 3) std::this_thread::yield();
  QuiescentPoint();
  EXPECT_EQ(Count("rep-"), freed + 1);
  step = 4;
  user.Join();
}

TEST(Destroy, FromInsideTheEbbsOwnMethod) {
  EbbRef<Box> box = Box::Create();
  int freed = Count("rep-");
  box->DestroySelf(box.id());
  EXPECT_EQ(Count("rep-"), freed);
  EXPECT_THROW(box->Sum(), DeadEbbError);
  QuiescentPoint();
  EXPECT_EQ(Count("rep-"), freed + 1);
}

TEST(Destroy, ADestroyedStaticIdStaysDead) {
  EbbRef<Box> box(testing::FreshStaticId("test.lifetime.lazy"));
  int roots = Count("root+");
  box->Add(1);  // created lazily
  EXPECT_EQ(Count("root+"), roots + 1);
  Destroy(box);
  EXPECT_THROW(box->Sum(), DeadEbbError);  // not re-created
  EXPECT_EQ(Count("root+"), roots + 1);
  EXPECT_THROW(Box::CreateAt(box.id()), EbbExistsError);
  QuiescentPoint();
}

TEST(Destroy, WithoutAnyCoreUsingRepsFreesAtOnce) {
  // The last core holds no reps, and no other core does either.
  int freed = Count("root-");
  EnterQuiescence();  // core 0 (this thread) too, for the length of the test
  testing::CoreTask t(testing::WorkerCores(), [&] {
    EbbRef<Box> box = Box::Create();
    EnterQuiescence();  // nothing else is running
    QuiescentPoint();
    Destroy(box);
  });
  t.Join();
  EXPECT_EQ(Count("root-"), freed + 1);
  ExitQuiescence();
}

TEST(Destroy, AHostedThreadThatExitsDoesNotHoldUpReclamation) {
  EbbRef<Box> box = Box::Create();
  int freed = Count("rep-");
  // Host threads: the thread exits; fox runtime: the core's job ends
  // (testing::CoreTask).
  testing::CoreTask t(3, [&] {
    box->Add(2);  // uses a rep, then ends without EnterQuiescence
  });
  t.Join();
  box->Add(1);
  Destroy(box);
  QuiescentPoint();
  EXPECT_EQ(Count("rep-"), freed + 2);
}

TEST(Destroy, ConcurrentUseAndDestroyNeverTouchFreedMemory) {
  const int kCores = std::min(6, testing::WorkerCores() - 1);  // and one more core destroys
  constexpr int kRounds = 100;
  Stats before = GetStats();
  for (int round = 0; round < kRounds; ++round) {
    EbbRef<Box> box = Box::Create();
    std::atomic<int> started{0};
    std::atomic<bool> destroy_returned{false};
    testing::CoreTask killer(kCores + 1, [&] {
      while (started.load() < kCores) std::this_thread::yield();
      Destroy(box);
      destroy_returned = true;
      QuiescentPoint();
      EnterQuiescence();
    });
    testing::RunOnCores(1, kCores, [&](int) {
      started.fetch_add(1);
      for (;;) {
        bool after_destroy = destroy_returned.load();
        try {
          Box* rep = box.Get();
          ASSERT_FALSE(after_destroy) << "dereference succeeded after Destroy returned";
          rep->Add(1);
          EXPECT_GE(rep->Sum(), 1);
        } catch (const DeadEbbError&) {
          break;
        }
        QuiescentPoint();
      }
    });
    killer.Join();
    EXPECT_THROW(box->Sum(), DeadEbbError);
  }
  QuiescentPoint();
  Stats after = GetStats();
  EXPECT_EQ(after.destroyed_ebbs, before.destroyed_ebbs + kRounds);
  EXPECT_EQ(after.retired_pending, 0u);
  EXPECT_EQ(after.reclaimed, before.reclaimed + kRounds);
}

// RetireLater and SharedRead (lifetime.h): one core keeps replacing a
// published object while the others read it; no reader ever sees one freed
// (ASan reports a use after free; the free function also scrubs the magic),
// and once the reads stop everything retired is freed.
struct Published {
  static constexpr uint64_t kMagic = 0x5eedf00dcafe1234ull;
  std::atomic<uint64_t> magic{kMagic};
  uint64_t serial = 0;
};
void FreePublished(void* p) {
  auto* object = static_cast<Published*>(p);
  object->magic.store(0, std::memory_order_relaxed);
  delete object;
}

TEST(RetireLater, ReadersNeverSeeAFreedObjectAndEverythingIsFreedAfterwards) {
  const int kCores = std::min(3, testing::WorkerCores() - 1);
  constexpr uint64_t kReplacements = 20000;
  uint64_t pending_before = ObjectsAwaitingReclaim();
  std::atomic<Published*> current{new Published};
  std::atomic<bool> done{false};
  std::atomic<uint64_t> reads{0}, bad{0};
  std::atomic<int> started{0};
  testing::CoreTask owner(kCores + 1, [&] {
    while (started.load() < kCores) std::this_thread::yield();
    for (uint64_t i = 1; i <= kReplacements; ++i) {
      auto* next = new Published;
      next->serial = i;
      Published* old = current.exchange(next, std::memory_order_acq_rel);
      RetireLater(old, FreePublished);
      if (i % 32 == 0) QuiescentPoint();
    }
    done.store(true);
  });
  testing::RunOnCores(1, kCores, [&](int) {
    uint64_t last = 0;
    started.fetch_add(1);
    while (!done.load(std::memory_order_relaxed)) {
      SharedRead reading;
      Published* p = current.load(std::memory_order_acquire);
      for (int spin = 0; spin < 50; ++spin) {
        if (p->magic.load(std::memory_order_relaxed) != Published::kMagic) bad.fetch_add(1);
      }
      if (p->serial < last) bad.fetch_add(1);  // one owner: serials only grow
      last = p->serial;
      reads.fetch_add(1, std::memory_order_relaxed);
    }
  });
  owner.Join();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(reads.load(), 0u);
  // Nothing reads now: the owner's core frees the rest at its quiescent points.
  testing::CoreTask drain(kCores + 1, [&] {
    for (int i = 0; i < 64 && ObjectsAwaitingReclaim() > pending_before; ++i) QuiescentPoint();
  });
  drain.Join();
  EXPECT_EQ(ObjectsAwaitingReclaim(), pending_before);
  delete current.load();
}

TEST(RetireLater, WithoutReadersObjectsAreFreedInBatches) {
  uint64_t pending_before = ObjectsAwaitingReclaim();
  testing::CoreTask owner(1, [&] {
    for (int i = 0; i < 1000; ++i) RetireLater(new Published, FreePublished);
    // Sealed and freed as they go: at most one batch open and one sealed.
    EXPECT_LE(ObjectsAwaitingReclaim(), pending_before + 128);
    SharedRead outer;  // nests; a read in progress holds back what is retired after it began
    { SharedRead inner; }
    for (int i = 0; i < 64; ++i) RetireLater(new Published, FreePublished);
    for (int i = 0; i < 40; ++i) QuiescentPoint();
    EXPECT_GE(ObjectsAwaitingReclaim(), pending_before + 64);
  });
  owner.Join();
  testing::CoreTask drain(1, [&] {
    for (int i = 0; i < 64 && ObjectsAwaitingReclaim() > pending_before; ++i) QuiescentPoint();
  });
  drain.Join();
  EXPECT_EQ(ObjectsAwaitingReclaim(), pending_before);
}

}  // namespace
}  // namespace fox::ebb
