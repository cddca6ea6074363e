// Start-up of a hosted fox program. The program's own main() is the same as
// on a compute node; linking with -Wl,--wrap=main (fox_hosted does it) makes
// the C library call __wrap_main instead, which starts FOX_CORES cores
// (default: the CPUs this process may use), each a thread running its event
// loop, and runs the real main as the first event of core 0 on its own stack,
// so main may block like any event. main's return value ends the process.
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "../common/event/loop.h"
#include "../common/event/platform.h"
#include "../common/terminate.h"
#include "fox/boot_args.h"
#include "fox/cmdline.h"
#include "fox/log.h"
#include "fox/panic.h"
#include "hosted.h"

extern "C" int __real_main(int argc, char** argv, char** envp);

namespace fox::hosted {
namespace {

constexpr size_t kMainStack = 8 << 20;

struct MainArgs {
  int argc;
  char** argv;
  char** envp;
};
MainArgs g_main;
bool g_pin = false;

void SetUpCore(int core) {
  CoreState& c = g_cores[core];
  c.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  c.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  c.timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (c.epoll_fd < 0 || c.wake_fd < 0 || c.timer_fd < 0) Panic("hosted: cannot create core %d's descriptors", core);
  for (int fd : {c.wake_fd, c.timer_fd}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(c.epoll_fd, EPOLL_CTL_ADD, fd, &ev);
  }
}

// Core i runs on the i-th CPU of the affinity the process started with
// (not CPU i), so that places started with disjoint affinities (taskset,
// or a launcher's sched_setaffinity) run on disjoint CPUs.
int g_cpus[core::kMaxCores];

void Pin(int core) {
  if (!g_pin) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(g_cpus[core], &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

void* CoreThread(void* arg) {
  int core = int(reinterpret_cast<intptr_t>(arg));
  t_core = core;
  Pin(core);
  event::Loop* loop = event::CreateLoop(core);
  g_online.fetch_add(1, std::memory_order_release);
  loop->Run();
}

void RunMain(void*) { std::exit(__real_main(g_main.argc, g_main.argv, g_main.envp)); }

int CoresFromEnvironment() {
  cpu_set_t set;
  int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  const char* env = std::getenv("FOX_CORES");
  if (env == nullptr || *env == '\0') return cpus;
  auto n = ParseUInt(env);
  if (!n.ok() || *n < 1 || *n > uint64_t(core::kMaxCores)) {
    std::fprintf(stderr, "fox: bad FOX_CORES='%s': expected an integer from 1 to %d\n", env, core::kMaxCores);
    std::exit(2);
  }
  g_pin = *n <= uint64_t(cpus);
  for (int cpu = 0, i = 0; g_pin && cpu < CPU_SETSIZE && i < int(*n); ++cpu) {
    if (CPU_ISSET(cpu, &set)) g_cpus[i++] = cpu;
  }
  return int(*n);
}

// FOX_PARENT_PID=P (fox run sets it for the places it starts): the place dies with the
// command that started it, even if that is SIGKILLed, and its stdout is line-buffered, so
// that its lines interleave in order with what it logs. Returns false (said why) if the
// variable is malformed or P is gone already.
bool TieToParent() {
  const char* env = std::getenv("FOX_PARENT_PID");
  if (env == nullptr || *env == '\0') return true;
  auto pid = ParseUInt(env);
  if (!pid.ok() || *pid < 2 || *pid > uint64_t(INT_MAX)) {
    std::fprintf(stderr, "fox: bad FOX_PARENT_PID='%s': expected a process id\n", env);
    return false;
  }
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != pid_t(*pid)) {  // it died before the line above took effect
    std::fprintf(stderr, "fox: the command that started this place (pid %s) is gone\n", env);
    return false;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  return true;
}

}  // namespace
}  // namespace fox::hosted

extern "C" int __wrap_main(int argc, char** argv, char** envp) {
  using namespace fox;
  using namespace fox::hosted;
  terminate::Install();  // uncaught exceptions: the same report and status 125 as on a node
  if (!TieToParent()) return 2;
  // The job's other places on this host may read this one's memory
  // (fox/peer_memory.h: large messages), where Yama allows only ancestors.
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY);
  // Freed memory stays with the place for reuse, as a node's heap keeps
  // it: glibc would map blocks over its threshold afresh (and give the top
  // of its heap back), so that a place that allocates the same large
  // buffers each step (a team's 400 KB reductions) took ~100 page faults
  // and zeroed pages for each (pagerank, 50k vertices on 2 places: 1.9 ms
  // a step, 0.56 ms without).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  if (const char* level = std::getenv("FOX_LOG")) {
    auto parsed = ParseLogLevel(level);
    if (!parsed.ok()) {
      std::fprintf(stderr, "fox: bad FOX_LOG='%s': expected debug, info, warn or error\n", level);
      return 2;
    }
    SetLogLevel(*parsed);
  }
  const char* why = nullptr;
  if (!InstallBootArgs(std::getenv("FOX_ARGS") ? std::getenv("FOX_ARGS") : "", &why).ok()) {
    std::fprintf(stderr, "fox: bad FOX_ARGS: %s\n", why);
    return 2;
  }
  g_num_cores = CoresFromEnvironment();
  g_main = MainArgs{argc, argv, envp};
  for (int c = 0; c < g_num_cores; ++c) SetUpCore(c);
  t_core = 0;
  Pin(0);
  event::Loop* loop = event::CreateLoop(0);
  g_online.store(1, std::memory_order_release);
  for (int c = 1; c < g_num_cores; ++c) {
    pthread_t thread;
    if (pthread_create(&thread, nullptr, CoreThread, reinterpret_cast<void*>(intptr_t(c))) != 0) {
      Panic("hosted: cannot start core %d", c);
    }
    pthread_detach(thread);
  }
  while (g_online.load(std::memory_order_acquire) < g_num_cores) sched_yield();
  uintptr_t stack = event::platform::AllocStack(kMainStack);
  if (stack == 0) Panic("hosted: no memory for main's stack");
  event::SpawnOnStack(stack, RunMain, nullptr);
  loop->Run();
}
