// The std::terminate handler of both platforms (terminate.h).
#include "terminate.h"

#include <cxxabi.h>
#include <unwind.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <typeinfo>

#include "fox/console.h"
#include "fox/core.h"
#include "fox/format.h"

namespace fox::terminate {
namespace {

constexpr int kMaxFrames = 64;

std::atomic<int> g_entered{0};

struct Frames {
  uintptr_t ip[kMaxFrames];
  int count = 0;
};

// The return addresses of the calling stack, innermost first, each minus one
// (inside the call instruction, so that the symbol is the caller's).
void CaptureBacktrace(Frames* frames) {
  _Unwind_Backtrace(
      [](_Unwind_Context* context, void* arg) -> _Unwind_Reason_Code {
        auto* f = static_cast<Frames*>(arg);
        uintptr_t ip = _Unwind_GetIP(context);
        if (ip == 0 || f->count == kMaxFrames) return _URC_END_OF_STACK;
        f->ip[f->count++] = ip - 1;
        return _URC_NO_REASON;
      },
      frames);
}

bool IsThrowFunction(const char* name) {
  return name != nullptr && (std::strcmp(name, "__cxa_throw") == 0 || std::strcmp(name, "__cxa_rethrow") == 0 ||
                             std::strncmp(name, "std::rethrow_exception", 22) == 0);
}

void PrintFrames(const Frames& frames, int first) {
  for (int i = first; i < frames.count; ++i) {
    uintptr_t offset = 0;
    const char* name = PlatformSymbol(frames.ip[i], &offset);
    console::PrintFrame(i - first, frames.ip[i], name, offset);
  }
}

[[noreturn]] void OnTerminate() {
  if (g_entered.fetch_add(1) != 0) {
    // The report itself ended in std::terminate (or two cores got here).
    PlatformBegin();
    PlatformStop();
  }
  // Everything that allocates comes before PlatformBegin: on a node it
  // stops the other cores, one of which may hold the heap's lock.
  Frames frames;
  CaptureBacktrace(&frames);
  char type[256] = "";
  char what[512] = "";
  bool has_what = false;
  if (const std::type_info* t = abi::__cxa_current_exception_type()) {
    int status = -1;
    char* demangled = abi::__cxa_demangle(t->name(), nullptr, nullptr, &status);
    Format(type, sizeof type, "%s", status == 0 && demangled != nullptr ? demangled : t->name());
    std::free(demangled);
    try {
      throw;  // the exception std::terminate was called for
    } catch (const std::exception& e) {
      Format(what, sizeof what, "%s", e.what());
      has_what = true;
    } catch (...) {
    }
  }

  PlatformBegin();
  int core = core::Current();
  if (type[0] != '\0') {
    // The first lines as libstdc++'s verbose handler words them.
    console::Printf("\nterminate called after throwing an instance of '%s'\n", type);
    if (has_what) console::Printf("  what():  %s\n", what);
    console::Printf("\nPANIC on core %d: uncaught exception in std::terminate()\n", core);
  } else {
    console::Printf("\nPANIC on core %d: std::terminate() called without an active exception\n", core);
  }
  // Skip the handler's frames: start after the last __cxa_throw (or
  // rethrow) when there is one, else after std::terminate's own frames.
  int first = -1;
  for (int i = 0; i < frames.count && i < 8; ++i) {
    uintptr_t offset;
    if (IsThrowFunction(PlatformSymbol(frames.ip[i], &offset))) first = i + 1;
  }
  if (first >= 0) {
    console::Printf("backtrace (where it was thrown):\n");
  } else {
    first = frames.count > 0 ? 1 : 0;  // frame 0 is OnTerminate itself
    console::Printf(type[0] != '\0'
                        ? "backtrace (std::terminate's caller; the exception had unwound to it, e.g. a noexcept "
                          "function):\n"
                        : "backtrace:\n");
  }
  PrintFrames(frames, first);
  PlatformStop();
}

}  // namespace

void Install() { std::set_terminate(OnTerminate); }

}  // namespace fox::terminate
