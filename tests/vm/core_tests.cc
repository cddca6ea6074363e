// Cores, roles and the per-core event loops, on a node with several cores.
#include <atomic>
#include <cstdlib>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "fox/clock.h"
#include "fox/core.h"
#include "fox/event.h"
#include "fox/event_mutex.h"
#include "fox/future.h"
#include "fox/timer.h"
#include "vmtest.h"
#ifdef FOX_NATIVE
#include "x86_64/cpu.h"
#include "x86_64/cpu_init.h"
#include "x86_64/interrupts.h"
#include "x86_64/lapic.h"
#endif

namespace vmtest {
namespace {

thread_local int tls_core = -1;

}  // namespace

int Cores(int argc, char** argv) {
  int want = argc > 1 ? std::atoi(argv[1]) : 4;
  int kernel = argc > 2 ? std::atoi(argv[2]) : 1;
  int online = fox::core::Online();
  std::printf("cores: %d online, %d present, %d kernel\n", online, fox::core::Present(), fox::core::KernelCores());
  CHECK(online == want && fox::core::KernelCores() == kernel);
  for (int c = 0; c < online; ++c) {
    CHECK(fox::core::IsKernelCore(c) == (c < kernel));
    int seen = RunOn(c, [c] {
      tls_core = c;  // thread_local is per core
      errno = 1000 + c;
#ifdef FOX_NATIVE
      std::printf("core %d here (%s, APIC id %u)\n", fox::core::Current(),
                  fox::core::IsKernelCore(c) ? "kernel" : "application", fox::lapic::Id());
#else
      std::printf("core %d here (%s)\n", fox::core::Current(), fox::core::IsKernelCore(c) ? "kernel" : "application");
#endif
      return fox::core::Current();
    });
    CHECK(seen == c);
  }
  for (int c = 0; c < online; ++c) {
    CHECK(RunOn(c, [] { return tls_core; }) == c);
    CHECK(RunOn(c, [] { return errno; }) == 1000 + c);
  }
  return 0;
}

// Every core sends `per_pair` events to every core (itself included); each
// event bumps a counter owned by its target core. Per-sender FIFO order lets
// a final fence event per (sender, target) pair confirm delivery.
int SpawnStorm(int argc, char** argv) {
  long per_pair = argc > 1 ? std::atol(argv[1]) : 100000;
  int n = fox::core::Online();
  struct alignas(64) Counter {
    uint64_t value = 0;
  };
  auto counters = std::make_shared<std::vector<Counter>>(n);
  auto fences = std::make_shared<std::atomic<int>>(0);
  auto done = std::make_shared<fox::Promise<void>>();
  auto finished = done->GetFuture();
  uint64_t start = fox::clock::NowNs();
  for (int sender = 0; sender < n; ++sender) {
    fox::event::SpawnRemote(sender, [=] {
      for (int target = 0; target < n; ++target) {
        for (long i = 0; i < per_pair; ++i) {
          fox::event::SpawnRemote(target, [counters, target] { (*counters)[target].value++; });
        }
        fox::event::SpawnRemote(target, [=] {
          if (fences->fetch_add(1) + 1 == n * n) done->SetValue();
        });
      }
    });
  }
  finished.Block();
  uint64_t ns = fox::clock::NowNs() - start;
  uint64_t total = 0;
  for (int c = 0; c < n; ++c) {
    uint64_t got = RunOn(c, [counters, c] { return (*counters)[c].value; });
    std::printf("core %d received %llu events\n", c, (unsigned long long)got);
    CHECK(got == uint64_t(per_pair) * n);
    total += got;
  }
  std::printf("spawn_storm: %llu cross-core events in %llu ms, counts exact\n", (unsigned long long)total,
              (unsigned long long)(ns / 1000000));
  return 0;
}

// EventMutex (fox/event_mutex.h): `events` events on every core take one
// lock `rounds` times each and add to a plain counter under it; every 25th
// section is held for 100 us, past the waiters' spin, so that waiters on
// the other cores block and their cores run other events (which wait too).
// One event per core waits only by spinning (Wait::kSpin). The counter must
// be exact, no two holders may overlap, and some waits must have blocked:
// first, whatever the host's scheduling, core 0 holds the lock until an
// event of core 1 is queued for it (that wait blocks for sure).
int EventMutexTest(int argc, char** argv) {
  int events = argc > 1 ? std::atoi(argv[1]) : 4;
  int rounds = argc > 2 ? std::atoi(argv[2]) : 400;
  struct Shared {
    fox::EventMutex mutex;
    uint64_t counter GUARDED_BY(mutex) = 0;
    std::atomic<int> inside{0};
    std::atomic<int> overlaps{0};
  };
  auto shared = std::make_shared<Shared>();
  int n = fox::core::Online();
  if (n >= 2) {
    auto took = std::make_shared<fox::Promise<void>>();
    auto taken = took->GetFuture();
    shared->mutex.Lock(fox::EventMutex::Wait::kSpin);
    fox::event::SpawnRemote(1, [shared, took] {
      fox::EventMutexGuard g(shared->mutex);
      took->SetValue();
    });
    uint64_t deadline = fox::clock::NowNs() + 10'000'000'000;
    while (!shared->mutex.has_waiters() && fox::clock::NowNs() < deadline) __builtin_ia32_pause();
    CHECK(shared->mutex.has_waiters());
    shared->mutex.Unlock();
    taken.Block();
  }
  auto left = std::make_shared<std::atomic<int>>(n * events);
  auto done = std::make_shared<fox::Promise<void>>();
  auto finished = done->GetFuture();
  uint64_t start = fox::clock::NowNs();
  for (int core = 0; core < n; ++core) {
    for (int e = 0; e < events; ++e) {
      auto wait = e == 0 ? fox::EventMutex::Wait::kSpin : fox::EventMutex::Wait::kBlock;
      fox::event::SpawnRemote(core, [=] {
        for (int i = 0; i < rounds; ++i) {
          fox::EventMutexGuard g(shared->mutex, wait);
          if (shared->inside.fetch_add(1) != 0) ++shared->overlaps;
          ++shared->counter;
          if (i % 25 == 0) {
            uint64_t until = fox::clock::NowNs() + 100'000;
            while (fox::clock::NowNs() < until) __builtin_ia32_pause();
          }
          shared->inside.fetch_sub(1);
        }
        if (left->fetch_sub(1) == 1) done->SetValue();
      });
    }
  }
  finished.Block();
  uint64_t ms = (fox::clock::NowNs() - start) / 1000000;
  uint64_t counted;
  {
    fox::EventMutexGuard g(shared->mutex);
    counted = shared->counter;
  }
  std::printf(
      "event_mutex: %d events on each of %d cores, %llu sections of %llu counted, %d overlaps, %llu waits "
      "blocked, %llu ms\n",
      events, n, (unsigned long long)counted, (unsigned long long)(uint64_t(n) * events * rounds),
      shared->overlaps.load(), (unsigned long long)shared->mutex.blocked(), (unsigned long long)ms);
  CHECK(counted == uint64_t(n) * events * rounds);
  CHECK(shared->overlaps.load() == 0);
  CHECK(n < 2 || shared->mutex.blocked() > 0);
  return 0;
}

// Work stealing (event::SpawnShared): cores 1.. form a steal group; core 0,
// which runs the test, stays out of it and must run none of the shared work.
// 1. `tasks` tasks of `ms` ms each, all queued at the group's first core,
//    run on more than one core of the group.
// 2. Exactly once: every member queues `per_core` tiny tasks at every member
//    while the others steal; each task's slot is hit exactly once.
// 3. A stolen task that blocks resumes on the core that took it.
int Steal(int argc, char** argv) {
  int tasks = argc > 1 ? std::atoi(argv[1]) : 24;
  int ms = argc > 2 ? std::atoi(argv[2]) : 5;
  int per_core = argc > 3 ? std::atoi(argv[3]) : 20000;
  constexpr int kGroup = 7;
  int online = fox::core::Online();
  int first = fox::core::KernelCores() < online ? fox::core::KernelCores() : 1;
  if (first < 1) first = 1;
  int members = online - first;
  CHECK(members >= 2);
  for (int c = first; c < online; ++c) fox::event::SetStealGroup(c, kGroup);

  struct alignas(64) Count {
    std::atomic<uint64_t> value{0};
  };
  auto ran = std::make_shared<std::vector<Count>>(online);
  auto left = std::make_shared<std::atomic<int>>(tasks);
  auto done = std::make_shared<fox::Promise<void>>();
  auto all_ran = done->GetFuture();
  auto steals = [online] {
    uint64_t n = 0;
    for (int c = 0; c < online; ++c) n += fox::event::GetStats(c).steals;
    return n;
  };
  uint64_t steals0 = steals();
  uint64_t start = fox::clock::NowNs();
  for (int i = 0; i < tasks; ++i) {
    fox::event::SpawnShared(first, [=] {
      uint64_t until = fox::clock::NowNs() + uint64_t(ms) * 1000000;
      while (fox::clock::NowNs() < until) {
      }
      (*ran)[fox::core::Current()].value.fetch_add(1);
      if (left->fetch_sub(1) == 1) done->SetValue();
    });
  }
  all_ran.Block();
  uint64_t elapsed_ms = (fox::clock::NowNs() - start) / 1000000;
  int used = 0;
  for (int c = 0; c < online; ++c) {
    uint64_t n = (*ran)[c].value.load();
    if (n != 0) ++used;
    std::printf("steal: core %d ran %llu\n", c, (unsigned long long)n);
  }
  CHECK((*ran)[0].value.load() == 0);
  std::printf(
      "steal: %d tasks of %d ms queued at core %d ran on %d of %d cores in %llu ms (serial %d ms), %llu steals\n",
      tasks, ms, first, used, members, (unsigned long long)elapsed_ms, tasks * ms,
      (unsigned long long)(steals() - steals0));
  // Taken by other cores is the property; the wall time is printed, not
  // checked (a loaded host deschedules the cores between tasks).
  CHECK(used >= 2);

  // 2. Exactly once under contention.
  int total = members * members * per_core;
  auto hits = std::make_shared<std::vector<std::atomic<uint8_t>>>(total);
  auto remaining = std::make_shared<std::atomic<int>>(total);
  auto exact = std::make_shared<fox::Promise<void>>();
  auto exact_done = exact->GetFuture();
  for (int s = 0; s < members; ++s) {
    fox::event::SpawnRemote(first + s, [=] {
      for (int t = 0; t < members; ++t) {
        for (int i = 0; i < per_core; ++i) {
          int id = (s * members + t) * per_core + i;
          fox::event::SpawnShared(first + t, [=] {
            (*hits)[id].fetch_add(1);
            if (remaining->fetch_sub(1) == 1) exact->SetValue();
          });
        }
      }
    });
  }
  exact_done.Block();
  for (int i = 0; i < total; ++i) CHECK((*hits)[i].load() == 1);
  std::printf("steal: %d shared tasks queued by %d cores ran exactly once each\n", total, members);

  // 3. Blocking in a stolen task. A round in which no other core got a host
  // processor in time to steal (a loaded host) is run again, up to 5 rounds.
  int blockers = 4 * members;
  auto moved = std::make_shared<std::atomic<int>>(0);
  auto cores_seen = std::make_shared<std::vector<Count>>(online);
  int took = 0;
  for (int round = 0; round < 5 && took < 2; ++round) {
    for (auto& c : *cores_seen) c.value.store(0);
    auto pending = std::make_shared<std::atomic<int>>(blockers);
    auto resumed = std::make_shared<fox::Promise<void>>();
    auto all_resumed = resumed->GetFuture();
    for (int i = 0; i < blockers; ++i) {
      fox::event::SpawnShared(first, [=] {
        int before = fox::core::Current();
        (*cores_seen)[before].value.fetch_add(1);
        uint64_t until = fox::clock::NowNs() + 2000000;
        while (fox::clock::NowNs() < until) {
        }
        fox::timer::Sleep(1000000);
        if (fox::core::Current() != before) moved->fetch_add(1);
        if (pending->fetch_sub(1) == 1) resumed->SetValue();
      });
    }
    all_resumed.Block();
    took = 0;
    for (int c = 0; c < online; ++c) took += (*cores_seen)[c].value.load() != 0;
    CHECK((*cores_seen)[0].value.load() == 0);
  }
  std::printf("steal: %d blocking tasks ran on %d cores, %d resumed elsewhere\n", blockers, took, moved->load());
  CHECK(moved->load() == 0 && took >= 2 && (*cores_seen)[0].value.load() == 0);
  for (int c = first; c < online; ++c) fox::event::SetStealGroup(c, 0);
  return 0;
}

// Timers on a kernel core (interrupt-driven) and an application core
// (polled): each fires no earlier than asked and at most `tolerance_ms` late.
int Timers(int argc, char** argv) {
  uint64_t tolerance_ms = argc > 1 ? std::atoi(argv[1]) : 20;
  int app = fox::core::Online() > fox::core::KernelCores() ? fox::core::KernelCores() : 0;
  for (int core : {0, app}) {
    uint64_t worst = RunOn(core, [] {
      const uint64_t delays_ms[] = {1, 2, 5, 10, 20, 35, 50};
      auto worst = std::make_shared<uint64_t>(0);
      auto remaining = std::make_shared<int>(7);
      fox::Promise<void> all;
      auto all_done = all.GetFuture();
      auto shared_all = std::make_shared<fox::Promise<void>>(std::move(all));
      for (uint64_t d : delays_ms) {
        uint64_t due = fox::clock::NowNs() + d * 1000000;
        fox::timer::Start(d * 1000000, [=] {
          uint64_t now = fox::clock::NowNs();
          CHECK(now >= due);
          if (now - due > *worst) *worst = now - due;
          if (--*remaining == 0) shared_all->SetValue();
        });
      }
      // A cancelled timer never fires.
      auto id = fox::timer::Start(5000000, [] { CHECK(false); });
      CHECK(fox::timer::Cancel(id));
      CHECK(!fox::timer::Cancel(id));
      all_done.Block();
      // A periodic timer: 10 ms period for 105 ms gives 10 runs. Missed
      // periods are skipped, not replayed (timer.h): when the host stalls
      // the emulated machine past a period, the run after the stall stands
      // for the periods it missed. Runs and skipped periods make the 10.
      // How many stalls there were is the host's doing (a loaded 2-CPU
      // host under TCG has shown two in 105 ms), so the gaps are printed,
      // not bounded; no run comes before its period is due.
      constexpr uint64_t kPeriod = 10000000;
      auto times = std::make_shared<std::vector<uint64_t>>();
      times->reserve(64);
      uint64_t start = fox::clock::NowNs();
      auto periodic = fox::timer::StartPeriodic(kPeriod, [times] { times->push_back(fox::clock::NowNs()); });
      fox::Promise<void> wait;
      auto waited = wait.GetFuture();
      auto shared_wait = std::make_shared<fox::Promise<void>>(std::move(wait));
      fox::timer::Start(105000000, [shared_wait] { shared_wait->SetValue(); });
      waited.Block();
      fox::timer::Cancel(periodic);
      int runs = int(times->size());
      int skipped = 0, gaps = 0;
      uint64_t prev = start;
      for (size_t i = 0; i < times->size(); ++i) {
        uint64_t t = (*times)[i];
        CHECK(t >= start + (i + 1) * kPeriod);                     // the i-th run is at least i+1 periods in
        int missed = int((t - prev + kPeriod / 2) / kPeriod) - 1;  // whole periods between two runs, less one
        if (missed > 0) {
          skipped += missed;
          ++gaps;
        }
        prev = t;
      }
      std::printf("core %d: periodic timer ran %d times in 105 ms (%d periods skipped in %d gaps)\n",
                  fox::core::Current(), runs, skipped, gaps);
      CHECK(runs >= 1 && runs + skipped >= 8 && runs + skipped <= 11);
      return *worst;
    });
    std::printf("timers on core %d (%s): worst lateness %llu us\n", core,
                fox::core::IsKernelCore(core) ? "kernel" : "application", (unsigned long long)(worst / 1000));
    CHECK(worst <= tolerance_ms * 1000000);
  }
  return 0;
}

// Blocking: events wait on futures fulfilled on other cores, continuations,
// exceptions through futures, broken promises.
int Futures(int, char**) {
  int other = fox::core::Online() > 1 ? 1 : 0;
  fox::Promise<int> p;
  auto f = p.GetFuture();
  auto shared = std::make_shared<fox::Promise<int>>(std::move(p));
  fox::event::SpawnRemote(other, [shared] { fox::timer::Start(2000000, [shared] { shared->SetValue(42); }); });
  CHECK(f.Block() == 42);
  // event::Local belongs to the event: kept across its blocking while other
  // events on the core set their own, null at the start of every event.
  int mine = 0, theirs = 0;
  fox::event::Local() = &mine;
  bool other_started_null = false;
  fox::event::Block([&](fox::event::Continuation k) {
    auto resume = std::make_shared<fox::event::Continuation>(std::move(k));
    fox::event::Spawn([&, resume] {
      other_started_null = fox::event::Local() == nullptr;
      fox::event::Local() = &theirs;
      resume->Resume();
    });
  });
  CHECK(other_started_null && fox::event::Local() == &mine);
  // Then: the continuation runs on this core.
  auto chained =
      fox::MakeReadyFuture(20).Then([](fox::Future<int> v) { return v.Get() + 1; }).Then([](fox::Future<int> v) {
        return std::to_string(v.Get() * 2) + " on " + std::to_string(fox::core::Current());
      });
  CHECK(chained.Block() == "42 on 0");
  // Exceptions cross cores through futures.
  bool caught = false;
  try {
    RunOn(other, []() -> int { throw std::runtime_error("remote failure"); });
  } catch (const std::runtime_error& e) {
    caught = std::string(e.what()) == "remote failure";
  }
  CHECK(caught);
  // A promise destroyed unfulfilled breaks its future.
  fox::Future<int> orphan;
  {
    fox::Promise<int> gone;
    orphan = gone.GetFuture();
  }
  caught = false;
  try {
    orphan.Block();
  } catch (const fox::BrokenPromise&) {
    caught = true;
  }
  CHECK(caught);
  // As std::promise: the future may be taken after the value is set; a
  // second value is refused, and the first stands.
  fox::Promise<int> early;
  early.SetValue(7);
  auto late = early.GetFuture();
  caught = false;
  try {
    early.SetValue(8);
  } catch (const fox::PromiseAlreadySatisfied&) {
    caught = true;
  }
  CHECK(caught);
  CHECK(late.Block() == 7);
  caught = false;
  try {
    (void)early.GetFuture();
  } catch (const fox::FutureAlreadyRetrieved&) {
    caught = true;
  }
  CHECK(caught);
  // Many blocked events at once on one core, resumed from another.
  constexpr int kWaiters = 200;
  auto resumed = std::make_shared<std::atomic<int>>(0);
  auto arrived = std::make_shared<int>(0);
  auto gates = std::make_shared<std::vector<std::shared_ptr<fox::Promise<void>>>>();
  std::vector<fox::Future<void>> all;
  for (int i = 0; i < kWaiters; ++i) {
    auto gate = std::make_shared<fox::Promise<void>>();
    auto gate_future = std::make_shared<fox::Future<void>>(gate->GetFuture());
    auto finished = std::make_shared<fox::Promise<void>>();
    all.push_back(finished->GetFuture());
    fox::event::Spawn([=] {
      if (++*arrived == kWaiters) {  // the last waiter: open every gate from another core
        fox::event::SpawnRemote(other, [gates] {
          for (auto& g : *gates) g->SetValue();
        });
      }
      gate_future->Block();
      resumed->fetch_add(1);
      finished->SetValue();
    });
    gates->push_back(gate);
  }
  for (auto& fut : all) fut.Block();
  CHECK(resumed->load() == kWaiters);
  auto s = fox::event::GetStats(0);
  CHECK(s.blocks >= kWaiters - 1 && s.resumes >= kWaiters - 1);  // the last may find its gate open
  std::printf("futures: %llu blocks, %llu resumes, %llu event stacks on core 0\n", (unsigned long long)s.blocks,
              (unsigned long long)s.resumes, (unsigned long long)s.stacks_allocated);
  // Delegate: the work runs on the target core, from the blocked caller's
  // frame, and may block there; on the caller's own core it runs inline.
  int ran_on = -1;
  uint64_t blocks_before = fox::event::GetStats(0).blocks;
  fox::event::Delegate(0, [&] { ran_on = fox::core::Current(); });
  CHECK(ran_on == 0 && fox::event::GetStats(0).blocks == blocks_before);
  std::string answer;
  fox::event::Delegate(other, [&] {
    fox::timer::Sleep(1000000);
    answer = "from core " + std::to_string(fox::core::Current());
  });
  CHECK(answer == "from core " + std::to_string(other));
  // From every core at once to the next, each a counter only its core
  // touches: exact counts (a lost or repeated delegate shows).
  {
    const int n = fox::core::Online();
    constexpr int kDelegates = 2000;
    std::vector<int> counts(size_t(n), 0);  // counts[c]: core c's only
    std::vector<fox::Future<void>> done;
    for (int c = 0; c < n; ++c) {
      done.push_back(Start(c, [&counts, c, n] {
        int to = (c + 1) % n;
        for (int i = 0; i < kDelegates; ++i) fox::event::Delegate(to, [&counts, to] { ++counts[size_t(to)]; });
      }));
    }
    for (auto& d : done) d.Block();
    for (int c = 0; c < n; ++c) CHECK(counts[size_t(c)] == kDelegates);
    std::printf("futures: %d delegates from each of %d cores to the next, counts exact\n", kDelegates, n);
  }
  return 0;
}

#ifdef FOX_NATIVE
// A remote spawn to a sleeping application core wakes it: after fox.idle=hlt
// with one wake-up IPI per spawn, after fox.idle=mwait with a write to its
// doorbell and no interrupt at all (where MWAIT does not wait, only while
// the core still polls: once halted it needs the IPI). `idle_wake MODE
// ROUNDS`, MODE being the fox.idle the node booted with; a CPU without
// MONITOR/MWAIT must have fallen back to HLT.
int IdleWake(int argc, char** argv) {
  std::string asked = argc > 1 ? argv[1] : "auto";
  int rounds = argc > 2 ? std::atoi(argv[2]) : 50;
  CHECK(fox::core::Online() > fox::core::KernelCores());
  const int app = fox::core::KernelCores();
  // Under a hypervisor `auto` settles at core 0's first idle (the probe):
  // let it go idle first.
  if (asked == "auto") fox::timer::Sleep(5'000'000);
  bool has_mwait = (fox::x86::Cpuid(1).ecx >> 3) & 1;
  bool mwait = fox::cpu::Idle().mode == fox::cpu::IdleMode::kMwait;
  if (asked == "hlt") CHECK(!mwait);
  if (asked == "mwait") {
    CHECK(mwait == has_mwait);
    if (!has_mwait) std::printf("idle_wake: this CPU has no MONITOR/MWAIT, fox.idle=mwait fell back to HLT\n");
  }
  // The core counts a sleep just before it waits, `sleeping` already set;
  // it stays asleep until something is spawned to it.
  // Where MWAIT waits (or with HLT), give the core 0.1 ms to be deep in it;
  // where the core polls, ring at once, well within its poll.
  uint64_t settle_ns = fox::cpu::Idle().poll_ns == 0 ? 100000 : 0;
  auto wait_asleep = [app, settle_ns](uint64_t sleeps) {
    uint64_t start = fox::clock::NowNs();
    while (fox::event::GetStats(app).sleeps == sleeps) CHECK(fox::clock::NowNs() - start < 5000000000ull);
    uint64_t asleep = fox::clock::NowNs();
    while (fox::clock::NowNs() - asleep < settle_ns) {
    }
  };
  auto sleeps_now = [app] { return fox::event::GetStats(app).sleeps; };
  wait_asleep(RunOn(app, sleeps_now));
  auto before = fox::event::GetStats(app);
  uint64_t interrupts_before = fox::core::InterruptCount(app);
  uint64_t wake_vector_before = fox::interrupts::Count(app, fox::lapic::kWakeVector);
  for (int i = 0; i < rounds; ++i) wait_asleep(RunOn(app, sleeps_now));
  auto after = fox::event::GetStats(app);
  uint64_t woken = after.wakeups_sent - before.wakeups_sent;
  uint64_t ipis = after.wakeup_ipis - before.wakeup_ipis;
  uint64_t interrupts = fox::core::InterruptCount(app) - interrupts_before;
  uint64_t wake_vector = fox::interrupts::Count(app, fox::lapic::kWakeVector) - wake_vector_before;
  std::printf(
      "idle_wake: %s, %d spawns to sleeping core %d: %llu wake-ups, %llu by doorbell alone, %llu by IPI, "
      "%llu interrupts taken (%llu on the wake-up vector)\n",
      mwait ? "MWAIT" : "HLT", rounds, app, (unsigned long long)woken, (unsigned long long)(woken - ipis),
      (unsigned long long)ipis, (unsigned long long)interrupts, (unsigned long long)wake_vector);
  CHECK(woken == uint64_t(rounds));
  CHECK(interrupts == ipis && wake_vector == ipis);  // an application core takes nothing else
  if (!mwait) {
    CHECK(ipis == woken);
  } else if (fox::cpu::Idle().poll_ns == 0) {
    CHECK(ipis == 0 && fox::core::InterruptCount(app) == 0);  // none, ever
  } else {
    // MWAIT does not wait here: the core polls, then halts. The spawns come
    // as soon as it went to sleep, well within its poll, unless the
    // emulator's threads were descheduled meanwhile.
    CHECK(woken - ipis >= 1);
  }
  return 0;
}
#endif

namespace {
volatile int g_depth_limit = 1 << 30;
[[gnu::noinline]] int DeepEvent(int depth) {
  volatile char frame[256];
  frame[0] = char(depth);
  if (depth > g_depth_limit) return 0;
  return DeepEvent(depth + 1) + frame[0];
}
}  // namespace

int EventStackOverflow(int, char**) {
  fox::event::Spawn([] { DeepEvent(0); });
  fox::Promise<void> never;
  auto f = never.GetFuture();
  auto keep = std::make_shared<fox::Promise<void>>(std::move(never));
  f.Block();  // main yields; the overflowing event runs on an event stack
  return 1;
}

}  // namespace vmtest
