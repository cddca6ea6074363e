// Helpers for the ebb/ host tests (see ebb_test_util.h).
#include "ebb_test_util.h"

#include <gtest/gtest.h>

#include <barrier>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fox/ebb/lifetime.h"

namespace fox::testing {

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
      } catch (const std::exception& e) {
        ADD_FAILURE() << "core " << core << " threw: " << e.what();
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
