// Exceptions nobody catches: one escaping main, one escaping an event on
// another core. Each must end the node (or process) with a report naming the
// exception's type and what(), where it was thrown, and status 125 (panic).
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "fox/core.h"
#include "fox/event.h"
#include "fox/future.h"
#include "vmtest.h"

namespace vmtest {

// Types of our own, so the report's demangled names are unmistakable.
struct EscapedFromMain : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct EscapedFromEvent : std::logic_error {
  using std::logic_error::logic_error;
};
struct NotAnException {
  int code;
};

[[gnu::noinline]] void ThrowFromMain(const char* kind) {
  std::printf("escape_main: throwing %s out of main\n", kind);
  if (std::string(kind) == "plain") throw NotAnException{7};
  if (std::string(kind) == "library") {  // thrown inside libstdc++
    volatile size_t past_end = 16;
    std::printf("%zu\n", std::string_view(kind).substr(past_end).size());
  }
  throw EscapedFromMain("nobody catches this in main");
}

// -- escape_main [plain]: the exception propagates out of main.
int EscapeMain(int argc, char** argv) {
  ThrowFromMain(argc > 1 ? argv[1] : "std");
  return 0;
}

[[gnu::noinline]] void ThrowFromEvent(int core) {
  throw EscapedFromEvent("thrown by an event on core " + std::to_string(core));
}

// -- escape_event CORE: an event on CORE throws; main waits for ever.
int EscapeEvent(int argc, char** argv) {
  int core = argc > 1 ? std::atoi(argv[1]) : 1;
  CHECK(core >= 0 && core < fox::core::Online());
  std::printf("escape_event: an event on core %d throws\n", core);
  fox::event::SpawnRemote(core, [] { ThrowFromEvent(fox::core::Current()); });
  fox::Promise<void> never;
  never.GetFuture().Block();
  std::printf("escape_event: main resumed, which it never should\n");
  return 1;
}

}  // namespace vmtest
