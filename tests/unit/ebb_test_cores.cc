// Test shim for the platform's core index (see ebb_test_cores.h). Linked only
// into the ebb test and benchmark programs: the hosted platform (kernel/linux)
// will define fox::core::Current for real programs.
#include "ebb_test_cores.h"

#include <barrier>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fox/core.h"
#include "fox/ebb/lifetime.h"

namespace {
thread_local int t_core = 0;
}  // namespace

int fox::core::Current() { return t_core; }

namespace fox::testing {

void SetCurrentCore(int core) { t_core = core; }

void RunOnCores(int first_core, int count, const std::function<void(int core)>& fn) {
  std::barrier start(count);
  std::vector<std::thread> threads;
  threads.reserve(count);
  for (int i = 0; i < count; ++i) {
    threads.emplace_back([&, core = first_core + i] {
      SetCurrentCore(core);
      start.arrive_and_wait();
      try {
        fn(core);
      } catch (...) {
        ebb::EnterQuiescence();
        throw;  // a test failure: std::terminate reports it
      }
      ebb::EnterQuiescence();
    });
  }
  for (auto& t : threads) t.join();
}

ebb::EbbId FreshStaticId(std::string_view base) {
  static std::mutex mu;
  static std::set<ebb::EbbId> used;
  static int counter = 0;
  std::lock_guard<std::mutex> lock(mu);
  if (used.size() >= ebb::kStaticIdCount / 2) std::abort();  // rerun with fewer repeats
  for (;;) {
    ebb::EbbId id = ebb::StaticId(std::string(base) + "#" + std::to_string(counter++));
    if (used.insert(id).second) return id;
  }
}

}  // namespace fox::testing
