// The cores of the ebb/ test suite as host threads (see ebb_test_util.h):
// core::Current() is the thread_local index of ebb_test_cores.h.
#include <gtest/gtest.h>

#include <barrier>
#include <chrono>
#include <exception>
#include <thread>
#include <vector>

#include "ebb_test_cores.h"
#include "ebb_test_util.h"
#include "fox/ebb/lifetime.h"

namespace fox::testing {

int WorkerCores() { return 8; }

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

struct CoreTask::State {
  std::thread thread;
};

CoreTask::CoreTask(int core, std::function<void()> fn) : state_(std::make_unique<State>()) {
  // The thread's exit (ebb/local_table_hosted.cc) is its quiescence.
  state_->thread = std::thread([core, fn = std::move(fn)] {
    SetCurrentCore(core);
    try {
      fn();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "core " << core << " threw: " << e.what();
    }
  });
}

CoreTask::~CoreTask() { Join(); }

void CoreTask::Join() {
  if (state_->thread.joinable()) state_->thread.join();
}

void SlowDown() { std::this_thread::sleep_for(std::chrono::milliseconds(2)); }

}  // namespace fox::testing
