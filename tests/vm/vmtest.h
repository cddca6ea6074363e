// The in-VM test image: `-- NAME` picks one test; each test prints what it
// checked and returns an exit status (0 = pass). tests/vm/tests.cmake is the
// table of runs (boot arguments, expected status and console lines).
#pragma once

#include <cstdio>
#include <cstdlib>

// Fails the test with a message naming the check.
#define CHECK(cond)                                                          \
  do {                                                                       \
    if (!(cond)) {                                                           \
      std::printf("CHECK FAILED: %s at %s:%d\n", #cond, __FILE__, __LINE__); \
      std::exit(1);                                                          \
    }                                                                        \
  } while (0)

#include <memory>
#include <type_traits>
#include <vector>

#include "fox/core.h"
#include "fox/event.h"
#include "fox/future.h"

namespace vmtest {

// Runs fn on `core` (one event there); its result, or its exception, in
// the future returned.
template <typename F>
auto Start(int core, F fn) {
  using R = decltype(fn());
  auto promise = std::make_shared<fox::Promise<R>>();
  auto future = promise->GetFuture();
  fox::event::SpawnRemote(core, [promise, fn = std::move(fn)]() mutable {
    try {
      if constexpr (std::is_void_v<R>) {
        fn();
        promise->SetValue();
      } else {
        promise->SetValue(fn());
      }
    } catch (...) {
      promise->SetException(std::current_exception());
    }
  });
  return future;
}

// Runs fn on `core` and blocks the calling event until it has run there.
template <typename F>
auto RunOn(int core, F fn) {
  return Start(core, std::move(fn)).Block();
}

// Runs fn on every online core at once and blocks the calling event until
// all have run; their results, by core.
template <typename F>
auto RunOnEveryCore(F fn) {
  std::vector<decltype(Start(0, fn))> futures;
  for (int c = 0; c < fox::core::Online(); ++c) futures.push_back(Start(c, fn));
  std::vector<decltype(fn())> results;
  for (auto& f : futures) results.push_back(f.Block());
  return results;
}

int Banner(int argc, char** argv);
int AllocStress(int argc, char** argv);
int AllocOom(int argc, char** argv);
int Exceptions(int argc, char** argv);
int Rtti(int argc, char** argv);
int StaticCtors(int argc, char** argv);
int ThreadLocal(int argc, char** argv);
int StdLib(int argc, char** argv);
int Clock(int argc, char** argv);
int NullDeref(int argc, char** argv);
int StackOverflow(int argc, char** argv);
int Terminate(int argc, char** argv);
int EscapeMain(int argc, char** argv);
int EscapeEvent(int argc, char** argv);
int ExitCode(int argc, char** argv);
int Sleep(int argc, char** argv);
int Ebbs(int argc, char** argv);
int EbbTableWindow(int argc, char** argv);
int Cores(int argc, char** argv);
int SpawnStorm(int argc, char** argv);
int EventMutexTest(int argc, char** argv);
int Steal(int argc, char** argv);
int Timers(int argc, char** argv);
int AppCoresQuiet(int argc, char** argv);
int ConsoleHold(int argc, char** argv);
int ConsoleHoldExit(int argc, char** argv);
int IdleWake(int argc, char** argv);
int Futures(int argc, char** argv);
int EventStackOverflow(int argc, char** argv);
int Sas(int argc, char** argv);
int SasReadOnlyWrite(int argc, char** argv);
int NicArp(int argc, char** argv);
int L2Exchange(int argc, char** argv);
int ReplaceBootArgs(int argc, char** argv);
}  // namespace vmtest
