// The cores of the ebb/ test suite on the fox runtime, hosted or native (see
// tests/unit/ebb_test_util.h): real cores 1..WorkerCores(), each running one
// long "parking" event (started with event::SpawnRemote on first use) that
// spins, quiescent, waiting for jobs from the test on core 0.
//
// Why parked and not one event per job: the tests count exactly when cores
// let go of representatives, as host threads do (a finished thread is
// quiescent for good). A core that returns to its event loop is quiescent
// only while it sleeps: every wake-up, spurious ones included (a wake-up
// racing with the core's own check for work), makes it use reps again until
// its next quiescent point (ebb/loop_hooks.cc), which would make the counts
// racy. A parked core is quiescent between jobs, deterministically.
//
// The test body (main's event on core 0) waits by spinning as well, never by
// blocking: a blocked event lets core 0's loop run and pass quiescent points
// behind the test's back.
#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <vector>

#include "ebb_test_runtime.h"
#include "ebb_test_util.h"
#include "fox/core.h"
#include "fox/ebb/lifetime.h"
#include "fox/event.h"

namespace fox::testing {
namespace {

// Spin-wait step. A direct call on purpose: libstdc++'s
// std::this_thread::yield() (which the tests use too) reaches sched_yield
// through a weak reference (gthr-posix.h), and a static native image links
// musl's sched_yield only if something references it strongly; otherwise
// yield() calls address 0. This reference is what links it.
void Relax() { sched_yield(); }

// A core that takes longer than this has hung: the run cannot go on.
constexpr auto kHang = std::chrono::seconds(120);
constexpr int kMaxWorkers = 8;

template <typename Done>
void SpinUntil(Done done, const char* what, int core) {
  auto deadline = std::chrono::steady_clock::now() + kHang;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::printf("ebb_suite: core %d hung (%s); giving up\n", core, what);
      std::fflush(stdout);
      std::_Exit(1);
    }
    Relax();
  }
}

struct Worker {
  std::atomic<bool> parked{false};
  std::atomic<std::function<void()>*> job{nullptr};  // owned by the dispatcher
  std::atomic<uint64_t> finished{0};                 // jobs done
};
// Leaked: parked cores may still be reading them while the program exits.
Worker* const g_workers = new Worker[kMaxWorkers + 1];
std::atomic<bool> g_release{false};
bool g_started = false;  // core 0 only

void Report(int core, std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "core " << core << " threw: " << e.what();
  } catch (...) {
    ADD_FAILURE() << "core " << core << " threw a non-std::exception";
  }
}

// The event each worker core runs until ReleaseCores().
void Park(int core) {
  Worker& w = g_workers[core];
  ebb::EnterQuiescence();  // holds no reps until a job dereferences one
  w.parked.store(true, std::memory_order_release);
  while (!g_release.load(std::memory_order_acquire)) {
    std::function<void()>* job = w.job.exchange(nullptr, std::memory_order_acquire);
    if (job == nullptr) {
      Relax();
      continue;
    }
    try {
      (*job)();
    } catch (...) {
      Report(core, std::current_exception());
    }
    ebb::EnterQuiescence();  // what a host thread's exit does
    w.finished.fetch_add(1, std::memory_order_release);
  }
}

void CheckCores(int first_core, int count) {
  if (first_core < 1 || count < 1 || first_core + count - 1 > WorkerCores()) {
    std::printf("ebb_suite: cores %d..%d asked for, but only 1..%d may be used\n", first_core, first_core + count - 1,
                WorkerCores());
    std::fflush(stdout);
    std::abort();
  }
  if (g_started) return;
  g_started = true;
  for (int core = 1; core <= WorkerCores(); ++core) event::SpawnRemote(core, [core] { Park(core); });
  for (int core = 1; core <= WorkerCores(); ++core) {
    SpinUntil([core] { return g_workers[core].parked.load(std::memory_order_acquire); }, "parking", core);
  }
}

// Hands `job` to a parked core; returns the finished count that means done.
uint64_t Dispatch(int core, std::function<void()>* job) {
  Worker& w = g_workers[core];
  uint64_t done_at = w.finished.load(std::memory_order_relaxed) + 1;
  w.job.store(job, std::memory_order_release);
  return done_at;
}

void Wait(int core, uint64_t done_at, const char* what) {
  SpinUntil([&] { return g_workers[core].finished.load(std::memory_order_acquire) >= done_at; }, what, core);
}

}  // namespace

int WorkerCores() { return core::Online() - 1 < kMaxWorkers ? core::Online() - 1 : kMaxWorkers; }

void RunOnCores(int first_core, int count, const std::function<void(int core)>& fn) {
  CheckCores(first_core, count);
  std::atomic<int> arrived{0};
  std::vector<std::function<void()>> jobs;
  jobs.reserve(count);
  for (int core = first_core; core < first_core + count; ++core) {
    jobs.emplace_back([&, core] {
      arrived.fetch_add(1);
      while (arrived.load() < count) Relax();
      fn(core);
    });
  }
  std::vector<uint64_t> done_at(count);
  for (int i = 0; i < count; ++i) done_at[i] = Dispatch(first_core + i, &jobs[i]);
  for (int i = 0; i < count; ++i) Wait(first_core + i, done_at[i], "RunOnCores");
}

struct CoreTask::State {
  int core;
  std::function<void()> job;
  uint64_t done_at = 0;
  bool joined = false;
};

CoreTask::CoreTask(int core, std::function<void()> fn) : state_(std::make_unique<State>()) {
  CheckCores(core, 1);
  state_->core = core;
  state_->job = std::move(fn);
  state_->done_at = Dispatch(core, &state_->job);
}

CoreTask::~CoreTask() { Join(); }

void CoreTask::Join() {
  if (state_->joined) return;
  state_->joined = true;
  Wait(state_->core, state_->done_at, "CoreTask");
}

void SlowDown() {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
  while (std::chrono::steady_clock::now() < end) {
  }
}

void ReleaseCores() { g_release.store(true, std::memory_order_release); }

}  // namespace fox::testing
