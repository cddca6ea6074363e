// Helpers for the ebb/ test suite (tests/unit/ebb_*_test.cc), which runs on
// three platforms, case for case:
//   * host threads as cores (unit.ebb.*): ebb_test_threads.cc, with
//     core::Current() from the ebb_test_cores.h shim;
//   * the hosted fox runtime (hosted.ebb_suite) and a native node
//     (vm.ebb_suite.*): tests/ebb_suite/ebb_test_runtime.cc, where the cores
//     are real and work reaches them through event::SpawnRemote.
// The test body itself always runs on core 0 (host: the main thread; fox:
// main's event, which never blocks while a test runs, so core 0 passes a
// quiescent point only where a test calls QuiescentPoint()).
#pragma once

#include <functional>
#include <memory>
#include <string_view>

#include "fox/ebb/ebb_id.h"

namespace fox::testing {

// How many cores besides core 0 the tests may use: 8 with host threads
// (cores are free), core::Online() - 1 (at most 8) on the fox runtime. The
// suite needs at least 3.
int WorkerCores();

// Runs fn(core) on cores first_core, first_core + 1, ..., first_core +
// count - 1 (all in [1, WorkerCores()]) at once: each starts after all have
// arrived at a barrier, so that they really race. An exception escaping fn
// is reported as a test failure. Each core enters quiescence
// (fox::ebb::EnterQuiescence) when fn is done. Returns when all have
// finished; the caller does not pass a quiescent point meanwhile.
void RunOnCores(int first_core, int count, const std::function<void(int core)>& fn);

// fn running on one core while the caller goes on, like a thread started on
// that core. Join() returns once fn has finished and the core has let go of
// it as a finished thread does: with host threads the thread has exited
// (which counts as entering quiescence, lifetime.h); on the fox runtime the
// core has entered quiescence and waits, parked, for its next job. The
// destructor joins. An exception escaping fn is a test failure.
class CoreTask {
 public:
  CoreTask(int core, std::function<void()> fn);
  ~CoreTask();
  CoreTask(const CoreTask&) = delete;
  CoreTask& operator=(const CoreTask&) = delete;
  void Join();

  struct State;

 private:
  std::unique_ptr<State> state_;
};

// Waits about 2 ms without blocking the calling event (constructors that
// are slow on purpose, so that other cores fault meanwhile; constructors
// must not block).
void SlowDown();

// A static id for a test Ebb: StaticId(base + "#n") for the first n whose id
// no earlier call in this process returned, so tests can be repeated
// (destroyed static ids stay dead) and never collide with each other.
ebb::EbbId FreshStaticId(std::string_view base);

}  // namespace fox::testing
