#include "fox/once.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace fox {
namespace {

// Threads stand in for cores: each asks at once; the set-up runs once, and
// every caller returns only after it finished (it sees what it wrote).
TEST(Once, RunsOnceAndEveryCallerSeesItsResult) {
  for (int round = 0; round < 50; ++round) {
    Once once;
    std::atomic<int> runs{0};
    int value = 0;  // written by the set-up only
    std::atomic<bool> go{false};
    std::vector<int> seen(8, -1);
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        while (!go.load()) {
        }
        once.Run([&] {
          runs.fetch_add(1);
          std::this_thread::sleep_for(std::chrono::microseconds(200));  // the others arrive meanwhile
          value = 42;
        });
        seen[t] = value;
      });
    }
    go.store(true);
    for (auto& t : threads) t.join();
    EXPECT_EQ(runs.load(), 1);
    for (int v : seen) EXPECT_EQ(v, 42);
    once.Run([&] { runs.fetch_add(1); });  // done: never again
    EXPECT_EQ(runs.load(), 1);
  }
}

}  // namespace
}  // namespace fox
