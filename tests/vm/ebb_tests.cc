// The Ebb object model on a node: per-core representatives created on
// first touch by every core at once, shared Ebbs, destroy then access.
#include <atomic>
#include <memory>
#include <vector>

#include "fox/core.h"
#include "fox/ebb/ebb.h"
#include "fox/event.h"
#include "fox/future.h"
#include "vmtest.h"
#ifdef FOX_NATIVE
#include "x86_64/paging.h"
#endif

namespace vmtest {
namespace {

std::atomic<int> g_roots{0}, g_reps{0}, g_shared{0};

struct TallyRoot {
  TallyRoot() { g_roots.fetch_add(1); }
  std::atomic<int> total{0};
};

class Tally : public fox::ebb::MulticoreEbb<Tally, TallyRoot> {
 public:
  explicit Tally(TallyRoot& root) : root_(root), core_(fox::core::Current()) { g_reps.fetch_add(1); }
  void Add(int n) {
    local_ += n;
    root_.total.fetch_add(n);
  }
  int local() const { return local_; }
  int core() const { return core_; }

 private:
  TallyRoot& root_;
  int core_;
  int local_ = 0;
};

class Config : public fox::ebb::SharedEbb<Config> {
 public:
  Config() { g_shared.fetch_add(1); }
  int Answer() const { return 42; }
};

}  // namespace

int Ebbs(int, char**) {
  int n = fox::core::Online();
  auto tally = Tally::Create();
  auto config = Config::Create();
  // Every core touches both Ebbs at once, many times.
  auto done = std::make_shared<std::atomic<int>>(0);
  auto all = std::make_shared<fox::Promise<void>>();
  auto finished = all->GetFuture();
  for (int c = 0; c < n; ++c) {
    fox::event::SpawnRemote(c, [=] {
      for (int i = 0; i < 1000; ++i) {
        tally->Add(1);
        CHECK(tally->core() == fox::core::Current());
        CHECK(config->Answer() == 42);
      }
      if (done->fetch_add(1) + 1 == n) all->SetValue();
    });
  }
  finished.Block();
  for (int c = 0; c < n; ++c) CHECK(RunOn(c, [=] { return tally->local(); }) == 1000);
  CHECK(g_roots.load() == 1 && g_reps.load() == n && g_shared.load() == 1);
  auto stats = fox::ebb::GetStats();
  std::printf("ebb: %d reps from 1 root on %d cores; %llu rep misses\n", g_reps.load(), n,
              (unsigned long long)stats.rep_misses);
  // Destroy, then every core's access fails cleanly.
  fox::ebb::Destroy(tally);
  for (int c = 0; c < n; ++c) {
    bool threw = RunOn(c, [=] {
      try {
        tally->Add(1);
      } catch (const fox::ebb::DeadEbbError&) {
        return true;
      }
      return false;
    });
    CHECK(threw);
  }
  std::printf("ebb: destroyed Ebb refused on every core\n");
  return 0;
}

#ifdef FOX_NATIVE
// The native translation table (fox/ebb/local_table.h): one fixed address on
// every core, backed by different pages on each. Each core writes its number
// through the fixed address into a slot no Ebb uses (the last direct slot:
// dynamic id 65535, handed out only after 49151 others), every core reads
// back its own number after all have written, and the physical pages behind
// the address differ.
int EbbTableWindow(int, char**) {
  int n = fox::core::Online();
  CHECK(n >= 2);
  constexpr uint32_t kSlot = fox::ebb::kDirectSlots - 1;
  auto tally = Tally::Create();
  fox::ebb::LocalTable* window = fox::ebb::ThisCoreTable();
  CHECK(reinterpret_cast<uintptr_t>(window) == fox::paging::kCoreWindow);
  std::vector<uintptr_t> pages(n);
  for (int c = 0; c < n; ++c) {
    pages[c] = RunOn(c, [=] {
      tally->Add(1);  // the core's first miss gives it its own table
      CHECK(fox::ebb::ThisCoreTable() == window);
      CHECK(window->slots[kSlot].load() == nullptr);
      window->slots[kSlot].store(reinterpret_cast<void*>(uintptr_t(c + 1)));
      return fox::paging::Translate(reinterpret_cast<uintptr_t>(&window->slots[kSlot]));
    });
  }
  uintptr_t empty = reinterpret_cast<uintptr_t>(&fox::ebb::EmptyTable()->slots[kSlot]);
  for (int c = 0; c < n; ++c) {
    CHECK(pages[c] != 0 && pages[c] != empty);
    for (int d = 0; d < c; ++d) CHECK(pages[c] != pages[d]);
    // The same memory seen through the identity map, from core 0.
    CHECK(reinterpret_cast<std::atomic<void*>*>(pages[c])->load() == reinterpret_cast<void*>(uintptr_t(c + 1)));
  }
  for (int c = 0; c < n; ++c) {
    uintptr_t seen = RunOn(c, [=] {
      auto value = reinterpret_cast<uintptr_t>(window->slots[kSlot].load());
      window->slots[kSlot].store(nullptr);
      return value;
    });
    CHECK(seen == uintptr_t(c + 1));
  }
  std::printf("ebb_table: table at %#lx on %d cores, %d distinct pages, each core reads its own value\n",
              (unsigned long)fox::paging::kCoreWindow, n, n);
  fox::ebb::Destroy(tally);
  return 0;
}
#endif

}  // namespace vmtest
