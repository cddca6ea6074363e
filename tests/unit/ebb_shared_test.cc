// SharedEbb: one object per node, shared by every core.
#include "fox/ebb/shared_ebb.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "ebb_test_util.h"
#include "fox/ebb/ebb.h"

namespace fox::ebb {
namespace {

// Cores besides core 0 that race in these tests.
int Cores() { return std::min(8, testing::WorkerCores()); }

std::atomic<int> g_constructed{0};
std::atomic<int> g_destroyed{0};

class Directory : public SharedEbb<Directory> {
 public:
  // Slow on purpose, so that the other cores fault while it runs.
  Directory() : Directory("lazy") { testing::SlowDown(); }
  explicit Directory(std::string name) : name_(std::move(name)) { g_constructed.fetch_add(1); }
  ~Directory() { g_destroyed.fetch_add(1); }
  const std::string& name() const { return name_; }
  void Touch() { touches_.fetch_add(1); }
  int touches() const { return touches_.load(); }

 private:
  std::string name_;
  std::atomic<int> touches_{0};
};

TEST(SharedEbb, CreateConstructsOnceAndEveryCoreSharesIt) {
  int constructed = g_constructed.load();
  EbbRef<Directory> dir = Directory::Create("root");
  EXPECT_EQ(g_constructed.load(), constructed + 1);
  EXPECT_TRUE(IsDynamicId(dir.id()));

  const int kCores = Cores();
  std::vector<std::atomic<Directory*>> seen(kCores + 1);
  testing::RunOnCores(1, kCores, [&](int core) {
    seen[core] = dir.Get();
    dir->Touch();
    EXPECT_EQ(dir->name(), "root");
  });
  EXPECT_EQ(g_constructed.load(), constructed + 1);
  for (int c = 2; c <= kCores; ++c) EXPECT_EQ(seen[c].load(), seen[1].load());
  EXPECT_EQ(dir->touches(), kCores);
  EXPECT_EQ(dir.Get(), seen[1].load());
  Destroy(dir);
  QuiescentPoint();
}

TEST(SharedEbb, SimultaneousFirstTouchOfAStaticIdConstructsExactlyOnce) {
  const int kCores = Cores();
  for (int round = 0; round < 20; ++round) {
    EbbRef<Directory> dir(testing::FreshStaticId("test.shared.race." + std::to_string(round)));
    int constructed = g_constructed.load();
    std::vector<uint64_t> misses(kCores + 1);
    for (int c = 1; c <= kCores; ++c) misses[c] = GetCoreStats(c).rep_misses;
    std::vector<std::atomic<Directory*>> seen(kCores + 1);

    testing::RunOnCores(1, kCores, [&](int core) {
      seen[core] = dir.Get();
      dir->Touch();
    });

    ASSERT_EQ(g_constructed.load(), constructed + 1) << "round " << round;
    for (int c = 1; c <= kCores; ++c) {
      EXPECT_EQ(seen[c].load(), seen[1].load());
      EXPECT_EQ(GetCoreStats(c).rep_misses, misses[c] + 1);
    }
    EXPECT_EQ(dir->name(), "lazy");
    EXPECT_EQ(dir->touches(), kCores);
    Destroy(dir);
  }
  QuiescentPoint();
}

TEST(SharedEbb, CreateAtATakenIdThrowsAndFreesTheNewObject) {
  EbbRef<Directory> dir = Directory::Create("first");
  int constructed = g_constructed.load();
  int destroyed = g_destroyed.load();
  EXPECT_THROW(Directory::CreateAt(dir.id(), "second"), EbbExistsError);
  EXPECT_EQ(g_constructed.load(), constructed + 1);
  EXPECT_EQ(g_destroyed.load(), destroyed + 1);
  EXPECT_EQ(dir->name(), "first");
  Destroy(dir);
  QuiescentPoint();
}

TEST(SharedEbb, CreateAtAStaticIdThenFaultUsesIt) {
  EbbId id = testing::FreshStaticId("test.shared.explicit");
  EbbRef<Directory> dir = Directory::CreateAt(id, "explicit");
  EXPECT_EQ(EbbRef<Directory>(id)->name(), "explicit");
  Destroy(dir);
  QuiescentPoint();
}

class Other : public SharedEbb<Other> {
 public:
  int x = 5;
};

TEST(SharedEbb, AnotherTypeAtTheSameIdIsATypeError) {
  EbbId id = testing::FreshStaticId("test.shared.typed");
  EbbRef<Directory> dir = Directory::CreateAt(id, "typed");
  EXPECT_THROW(EbbRef<Other>(id).Get(), EbbTypeError);
  EXPECT_EQ(dir->name(), "typed");
  Destroy(dir);
  QuiescentPoint();
}

std::atomic<int> g_flaky_attempts{0};
class Flaky : public SharedEbb<Flaky> {
 public:
  Flaky() {
    if (g_flaky_attempts.fetch_add(1) == 0) throw std::runtime_error("first try fails");
  }
  int ok = 1;
};

TEST(SharedEbb, ALazyConstructorThatThrowsIsRetriedOnTheNextFault) {
  g_flaky_attempts = 0;
  EbbRef<Flaky> flaky(testing::FreshStaticId("test.shared.flaky"));
  EXPECT_THROW(flaky.Get(), std::runtime_error);
  EXPECT_EQ(flaky.LocalRepOrNull(), nullptr);
  EXPECT_EQ(flaky->ok, 1);
  EXPECT_EQ(g_flaky_attempts.load(), 2);
  Destroy(flaky);
  QuiescentPoint();
}

EbbId g_self_id;
class SelfReferencing : public SharedEbb<SelfReferencing> {
 public:
  SelfReferencing() { EbbRef<SelfReferencing>(g_self_id)->x = 1; }
  int x = 0;
};

TEST(SharedEbb, AConstructorDereferencingItsOwnEbbThrowsInsteadOfDeadlocking) {
  g_self_id = testing::FreshStaticId("test.shared.self");
  EbbRef<SelfReferencing> self(g_self_id);
  EXPECT_THROW(self.Get(), EbbError);
  EXPECT_THROW(Destroy(self), DeadEbbError);  // the failed construction left nothing
  QuiescentPoint();
}

}  // namespace
}  // namespace fox::ebb
