// The hosted platform (DESIGN.md "kernel/linux"): the same API as the native
// kernel on Linux. Each fox core is a thread (pinned when the machine has
// enough CPUs); each runs the same neutral event loop, which sleeps in
// epoll_wait on an eventfd (wake-ups from other cores) and a timerfd (its
// next timer). Code above kernel/ cannot tell the difference.
#include <cxxabi.h>
#include <dlfcn.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "../common/event/platform.h"
#include "../common/event/idle.h"
#include "../common/terminate.h"
#include "fox/clock.h"
#include "fox/console.h"
#include "fox/core.h"
#include "fox/exit.h"
#include "fox/irq_spinlock.h"
#include "fox/panic.h"
#include "hosted.h"

namespace fox {
namespace hosted {

CoreState g_cores[core::kMaxCores];
std::atomic<int> g_online{0};
int g_num_cores = 1;
thread_local int t_core = 0;

namespace {
struct FdWatch {
  void (*fn)(void*);
  void* arg;
};
constexpr int kMaxWatches = 64;
constexpr uint64_t kWatchTag = 1ull << 63;  // epoll data of a watch: tag | index
FdWatch g_watches[kMaxWatches];
std::atomic<int> g_watch_count{0};
}  // namespace

bool WatchReadable(int core, int fd, void (*fn)(void*), void* arg) {
  if (core < 0 || core >= g_num_cores) return false;
  int index = g_watch_count.fetch_add(1);
  if (index >= kMaxWatches) return false;
  g_watches[index] = {fn, arg};
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kWatchTag | uint64_t(index);
  if (epoll_ctl(g_cores[core].epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) return false;
  g_cores[core].has_watches.store(true, std::memory_order_relaxed);
  return true;
}

}  // namespace hosted

using hosted::g_cores;

// ---- clock, console, cores ----

uint64_t clock::NowNs() {
  static const uint64_t start = [] {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000 + uint64_t(ts.tv_nsec);
  }();
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000 + uint64_t(ts.tv_nsec) - start;
}

void console::Write(const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(2, data, n);
    if (w <= 0) {
      if (w < 0 && errno == EINTR) continue;
      return;
    }
    data += w;
    n -= size_t(w);
  }
}

int core::Current() { return hosted::t_core; }
int core::Online() { return hosted::g_online.load(std::memory_order_acquire); }
int core::Present() { return hosted::g_num_cores; }
int core::KernelCores() { return hosted::g_num_cores; }  // hosted cores all take events and timers
bool core::IsKernelCore(int c) { return c >= 0 && c < hosted::g_num_cores; }
uint64_t core::InterruptCount(int) { return 0; }

bool irq::Save() { return false; }
void irq::Restore(bool) {}

[[noreturn]] void Exit(int status) { std::exit(status); }

[[noreturn]] void Panic(const char* fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  std::fprintf(stderr, "\nPANIC on core %d: %s\n", core::Current(), buf);
  std::fflush(stderr);
  std::_Exit(kExitPanic);
}

// ---- std::terminate's report (common/terminate.h) ----

namespace terminate {

// What the program printed so far comes before the report.
void PlatformBegin() { std::fflush(stdout); }

// dladdr finds exported symbols (fox_hosted links programs with -rdynamic);
// otherwise the object's name and the offset in it, for addr2line.
const char* PlatformSymbol(uintptr_t ip, uintptr_t* offset) {
  static char name[256];
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(ip), &info) == 0) return nullptr;
  if (info.dli_sname != nullptr && info.dli_saddr != nullptr) {
    int status = -1;
    size_t size = sizeof name;
    char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
    std::snprintf(name, size, "%s", status == 0 && demangled != nullptr ? demangled : info.dli_sname);
    std::free(demangled);
    *offset = ip - reinterpret_cast<uintptr_t>(info.dli_saddr);
    return name;
  }
  if (info.dli_fname == nullptr) return nullptr;
  const char* slash = std::strrchr(info.dli_fname, '/');
  std::snprintf(name, sizeof name, "(%s)", slash != nullptr ? slash + 1 : info.dli_fname);
  *offset = ip - reinterpret_cast<uintptr_t>(info.dli_fbase);
  return name;
}

[[noreturn]] void PlatformStop() { std::_Exit(kExitPanic); }

}  // namespace terminate

// ---- the event loop's hooks ----

namespace event::platform {

// Drains wake-ups and timer expiries, and runs the watches that fired.
void HandleEvents(hosted::CoreState& c, epoll_event* events, int n) {
  for (int i = 0; i < n; ++i) {
    uint64_t drain;
    if (events[i].data.u64 & hosted::kWatchTag) {
      const hosted::FdWatch& w = hosted::g_watches[events[i].data.u64 & ~hosted::kWatchTag];
      w.fn(w.arg);
      continue;
    }
    if (events[i].data.fd == c.wake_fd || events[i].data.fd == c.timer_fd) {
      (void)::read(events[i].data.fd, &drain, sizeof drain);
    }
  }
}

namespace {
// Idle (../common/event/idle.h): a core polls its doorbell before it sleeps
// in epoll_wait, so that an answer from another core that comes within the
// window costs neither side a system call; a waker writes the eventfd only
// to a core that went to sleep.
Doorbell g_doorbells[core::kMaxCores];
PollWindow g_poll_windows[core::kMaxCores];
// At most this long: hosted nodes often share the machine's processors
// with many others (a test's cluster), and a polling thread yields to them.
constexpr uint64_t kMaxPollNs = 200'000;
// While polling, a core with descriptors to watch looks at them this often
// (a system call each; a message's wait for it is half this on average: at
// 20 us, two hosted places' smallest Team allreduce took 36 us a step, at
// 2 us 19 us).
constexpr uint64_t kWatchLookNs = 2'000;

void Sleep(hosted::CoreState& c, uint64_t deadline_ns) {
  itimerspec spec{};
  if (deadline_ns != 0) {
    // timerfd wants CLOCK_MONOTONIC time; NowNs counts from process start.
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t mono_now = uint64_t(now.tv_sec) * 1000000000 + uint64_t(now.tv_nsec);
    uint64_t fox_now = clock::NowNs();
    uint64_t at = mono_now + (deadline_ns > fox_now ? deadline_ns - fox_now : 1);
    spec.it_value.tv_sec = time_t(at / 1000000000);
    spec.it_value.tv_nsec = long(at % 1000000000);
  }
  timerfd_settime(c.timer_fd, TFD_TIMER_ABSTIME, &spec, nullptr);
  epoll_event events[8];
  int n = epoll_wait(c.epoll_fd, events, 8, -1);
  HandleEvents(c, events, n);
}
}  // namespace

void WaitForWork(uint64_t deadline_ns) {
  int core = hosted::t_core;
  hosted::CoreState& c = g_cores[core];
  Doorbell& bell = g_doorbells[core];
  PollWindow& window = g_poll_windows[core];
  if (!bell.StartPolling()) return bell.Done();
  uint64_t start = clock::NowNs();
  uint64_t poll_until = start + window.ns, watches_seen = start;
  for (;;) {
    if (!bell.Polling()) break;  // rung
    uint64_t now = clock::NowNs();
    if (deadline_ns != 0 && now >= deadline_ns) break;
    if (c.has_watches.load(std::memory_order_relaxed) && now - watches_seen >= kWatchLookNs) {
      watches_seen = now;
      epoll_event events[8];
      int n = epoll_wait(c.epoll_fd, events, 8, 0);
      if (n > 0) {
        HandleEvents(c, events, n);
        break;
      }
    }
    if (now >= poll_until) {
      if (bell.FallAsleep()) {
        Sleep(c, deadline_ns);
        window.Adapt(clock::NowNs() - now, kMaxPollNs);
      }
      break;
    }
    sched_yield();
  }
  bell.Done();
}

void PollWhileBusy() {
  hosted::CoreState& c = g_cores[hosted::t_core];
  if (!c.has_watches.load(std::memory_order_relaxed)) return;
  uint64_t now = clock::NowNs();
  if (now - c.last_poll_ns < 100'000) return;
  c.last_poll_ns = now;
  epoll_event events[8];
  int n = epoll_wait(c.epoll_fd, events, 8, 0);
  HandleEvents(c, events, n);
}

bool Wake(int target) {
  if (!g_doorbells[target].Ring()) return false;
  uint64_t one = 1;
  (void)::write(g_cores[target].wake_fd, &one, sizeof one);
  return false;
}

bool HasTimerInterrupt() { return true; }
bool DisableInterrupts() { return false; }
void RestoreInterrupts(bool) {}

// Stacks from mmap with an inaccessible guard page below them.
uintptr_t AllocStack(size_t bytes) {
  size_t page = 4096;
  bytes = (bytes + page - 1) & ~(page - 1);
  void* p = mmap(nullptr, bytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return 0;
  mprotect(p, page, PROT_NONE);
  return reinterpret_cast<uintptr_t>(p) + page + bytes;
}

void FreeStack(uintptr_t top, size_t bytes) {
  size_t page = 4096;
  bytes = (bytes + page - 1) & ~(page - 1);
  munmap(reinterpret_cast<void*>(top - bytes - page), bytes + page);
}

}  // namespace event::platform
}  // namespace fox
