#include "smp.h"

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <new>

#include "acpi.h"
#include "cpu.h"
#include "cpu_init.h"
#include "fox/clock.h"
#include "fox/core.h"
#include "fox/log.h"
#include "fox/panic.h"
#include "gdt.h"
#include "interrupts.h"
#include "lapic.h"
#include "memory.h"
#include "paging.h"
#include "percpu.h"
#include "tsc.h"
#include "../common/event/loop.h"

extern "C" char trampoline_start[], trampoline_end[], trampoline_cr3[], trampoline_efer[], trampoline_stacks[],
    trampoline_entry[], trampoline_slots[], trampoline_ticket[];

namespace fox::smp {
namespace {

constexpr uintptr_t kTrampoline = 0x8000;
constexpr size_t kBootStackBytes = 64 * 1024;  // until the core becomes a thread
constexpr size_t kThreadStackBytes = 256 * 1024;
constexpr uint64_t kSecondSipiNs = 1000000;        // 1 ms without an answer: SIPI again
constexpr uint64_t kAnswerTimeoutNs = 1000000000;  // then give up on a processor
constexpr uint64_t kSetUpTimeoutNs = 2000000000;   // an answering core's own set-up

// A core number's resources, prepared by the boot core while the processors
// run the trampoline, so that a starting core takes no lock and allocates
// nothing (on an emulator with fewer host processors than cores, a lock
// holder descheduled by the host stalls every core waiting for the lock);
// then the hand-over of its C library thread.
struct Core {
  percpu::CoreLocal* local = nullptr;
  uint64_t root = 0;    // its PML4 (paging::NewCoreRoot)
  uintptr_t stack = 0;  // top of its thread's stack (AttachThreads)
  std::atomic<bool> online{false};
  std::atomic<bool> has_thread{false};
  syscall::CloneArgs thread{};
};
// constinit: the C library runs dynamic initialisers long after the cores
// started, and one would wipe what they were given.
constinit Core g_cores[core::kMaxCores];
int g_started = 1;        // cores started, the boot core included
int g_clone_target = -1;  // core the next clone() goes to (boot core only)

// Parallel start. Every processor gets INIT-SIPI-SIPI at once and takes a
// ticket in the trampoline; ticket t runs on boot stack g_stacks[t] and
// reports through g_slots[t]: its APIC id, then kArrived. The boot core
// numbers the processors that answered in MADT order, so core numbers do not
// depend on which processor was quicker, as soon as every processor before
// them in that order has answered, and writes each its core number; a slot
// that did not answer in time is closed (kRefused), and a processor that
// answers after that halts for good. The compare-and-swap on `state` decides
// each race between a late answer and the close.
constexpr int kEmpty = -1, kArrived = -2, kRefused = -3;  // else: the core number
struct Slot {
  std::atomic<uint32_t> apic_id{0};
  std::atomic<int> state{kEmpty};
};
constinit Slot g_slots[core::kMaxCores];
uint64_t g_stacks[core::kMaxCores];

template <typename T>
T* TrampolineField(char* symbol) {
  return reinterpret_cast<T*>(kTrampoline + (symbol - trampoline_start));
}

// Starts a thread on this core from a clone() register state (syscall_entry.S).
extern "C" [[noreturn]] void fox_enter_thread(const syscall::CloneArgs* args);
static_assert(offsetof(syscall::CloneArgs, new_sp) == 8 && offsetof(syscall::CloneArgs, rdi) == 40 &&
                  offsetof(syscall::CloneArgs, rip) == 88,
              "fox_enter_thread's offsets");

[[noreturn]] void EnterThread(const syscall::CloneArgs& t) {
  x86::SetFsBase(t.tls);
  fox_enter_thread(&t);
}

// Core `core`'s CoreLocal, page tables, GDT/TSS with IST stacks and its
// thread's stack. Boot core. kNoMemory (nothing kept then).
Result<void> Prepare(int core) {
  Core& c = g_cores[core];
  c.local = new (std::nothrow) percpu::CoreLocal{};
  if (c.local != nullptr) c.local->starting = true;
  c.stack = memory::AllocStack(kThreadStackBytes, "the guard page below a core's stack (stack overflow)");
  auto root = paging::NewCoreRoot();
  auto gdt = root.ok() ? gdt::PrepareCore(core) : Result<void>(Error::kNoMemory);
  if (c.local == nullptr || c.stack == 0 || !gdt.ok()) {
    if (root.ok()) paging::FreeCoreRoot(*root);
    if (c.stack != 0) memory::FreeStack(c.stack, kThreadStackBytes);
    delete c.local;
    c.local = nullptr;
    c.stack = 0;
    return Error::kNoMemory;
  }
  c.root = *root;
  return Ok();
}

// Gives back what Prepare took for a core number no processor took.
void Unprepare(int core) {
  Core& c = g_cores[core];
  paging::FreeCoreRoot(c.root);
  gdt::ReleaseCore(core);
  memory::FreeStack(c.stack, kThreadStackBytes);
  delete c.local;
  c.local = nullptr;
  c.root = 0;
  c.stack = 0;
}

[[noreturn]] void ApEntry(int core) {
  bool kernel_core = core < core::KernelCores();
  Core& c = g_cores[core];
  percpu::InitCore(c.local, core, kernel_core);  // first: the heap needs core::Current()
  paging::LoadCoreRoot(c.root);                  // it started on the shared PML4
  gdt::LoadCore(core);
  interrupts::LoadIdt();
  cpu::InitFeatures();
  syscall::Init();
  lapic::InitCore();
  c.local->apic_id = lapic::Id();  // the APIC's own view (x2APIC ids exceed CPUID's 8 bits)
  if (!kernel_core) lapic::DisableTimer();
  percpu::SetOnline(core, c.local);
  c.online.store(true, std::memory_order_release);
  // Halted until Clone hands this core its thread and wakes it with one
  // kWakeVector IPI: spinning would take the machine (or, emulated, the
  // host's processors) from the boot core for the rest of its boot. STI's
  // one-instruction shadow keeps a wake-up that arrives before the HLT
  // pending until the HLT. The core goes on only once it has taken that
  // IPI, so none is left pending. Interrupts of its start-up are counted
  // apart (CoreLocal::starting): an application core's count stays 0.
  while (__atomic_load_n(&c.local->startup_wakes, __ATOMIC_RELAXED) == 0 ||
         !c.has_thread.load(std::memory_order_acquire)) {
    asm volatile("sti; hlt; cli" ::: "memory");
  }
  __atomic_store_n(&c.local->starting, false, __ATOMIC_RELEASE);  // interrupts are off (cli) here
  EnterThread(c.thread);
}

// The trampoline's call, on the boot stack of `ticket`. Touches nothing
// per-core (no GS base yet) until it has a core number.
extern "C" [[noreturn]] void ApStart(int ticket) {
  Slot& slot = g_slots[ticket];
  slot.apic_id.store(x86::InitialApicId(), std::memory_order_relaxed);
  int expected = kEmpty;
  if (!slot.state.compare_exchange_strong(expected, kArrived, std::memory_order_acq_rel)) x86::HaltForever();
  int core;
  while ((core = slot.state.load(std::memory_order_acquire)) == kArrived) x86::Pause();
  if (core == kRefused) x86::HaltForever();
  ApEntry(core);
}

// The core thread's body: this core's event loop.
void* CoreThread(void* arg) {
  int core = int(reinterpret_cast<intptr_t>(arg));
  if (core != core::Current()) Panic("smp: thread for core %d started on core %d", core, core::Current());
  event::ThisLoop()->Run();
}

// The slot in [0, n) of the processor `apic_id` if it has answered, else -1.
int AnsweredSlot(uint32_t apic_id, int n) {
  for (int t = 0; t < n; ++t) {
    if (g_slots[t].state.load(std::memory_order_acquire) == kArrived &&
        g_slots[t].apic_id.load(std::memory_order_relaxed) == apic_id) {
      return t;
    }
  }
  return -1;
}

// The boot core's wait between two looks at the others: halted until its
// timer, 20 us ahead, rather than spinning, which leaves the machine (or,
// emulated, the host's processors) to the cores starting.
void Nap() {
  lapic::ArmTimer(x86::Rdtsc() + tsc::NsToTicks(20000));
  asm volatile("sti; hlt; cli" ::: "memory");
  lapic::ArmTimer(0);
}

// Numbering, in MADT order (targets[i]): the first `numbered` targets are
// dealt with; `next` is the next core number, `prepared` the last core
// number with resources.
struct Numbering {
  const uint32_t* targets;
  int n;
  int prepared;
  int numbered = 0;
  int next = 1;
};

// Core number `core` for the processor in `slot`, which is waiting for it.
void Release(Numbering& num, int slot) {
  if (num.next > num.prepared) {
    LOG_ERROR("smp: no memory to set up a core for the processor with APIC id %u; left halted",
              g_slots[slot].apic_id.load(std::memory_order_relaxed));
    g_slots[slot].state.store(kRefused, std::memory_order_release);
    return;
  }
  event::CreateLoop(num.next);
  g_slots[slot].state.store(num.next++, std::memory_order_release);
}

// Numbers the answered processors up to the first, in MADT order, that has
// not answered yet.
void NumberAnswered(Numbering& num) {
  for (; num.numbered < num.n; ++num.numbered) {
    int slot = AnsweredSlot(num.targets[num.numbered], num.n);
    if (slot < 0) return;
    Release(num, slot);
  }
}

// Numbers processors as they answer until all have or `deadline` (NowNs).
void NumberUntil(Numbering& num, uint64_t deadline) {
  for (;;) {
    NumberAnswered(num);
    if (num.numbered == num.n || fox::clock::NowNs() >= deadline) return;
    Nap();
  }
}

// Starts the processors `apic_ids` together. Returns the number of cores
// online, the boot core included; cores 1.. are the answering processors in
// the order of `apic_ids`.
int StartAll(const uint32_t* apic_ids, int n) {
  for (int i = 0; i < n; ++i) {
    g_stacks[i] = memory::AllocStack(kBootStackBytes, "the guard page below a core's boot stack");
    if (g_stacks[i] == 0) {
      LOG_ERROR("smp: no memory for boot stacks; starting %d of %d other processors", i, n);
      n = i;
      break;
    }
  }
  std::memcpy(reinterpret_cast<void*>(kTrampoline), trampoline_start, size_t(trampoline_end - trampoline_start));
  *TrampolineField<uint32_t>(trampoline_cr3) = uint32_t(paging::SharedRoot());  // not core 0's own
  *TrampolineField<uint32_t>(trampoline_efer) = uint32_t(x86::ReadMsr(x86::kMsrEfer) & ((1u << 8) | (1u << 11)));
  *TrampolineField<uint64_t>(trampoline_stacks) = reinterpret_cast<uint64_t>(g_stacks);
  *TrampolineField<uint64_t>(trampoline_entry) = reinterpret_cast<uint64_t>(ApStart);
  *TrampolineField<uint32_t>(trampoline_slots) = uint32_t(n);
  *TrampolineField<uint32_t>(trampoline_ticket) = 0;
  asm volatile("mfence" ::: "memory");

  for (int i = 0; i < n; ++i) lapic::SendInit(apic_ids[i]);
  tsc::SpinNs(10000);  // modern processors need no 10 ms wait after INIT
  for (int i = 0; i < n; ++i) lapic::SendStartup(apic_ids[i], uint8_t(kTrampoline >> 12));
  uint64_t start = fox::clock::NowNs();
  // While the processors run the trampoline: every core number's resources
  // (in the usual case all answer), then the idle mode, whose probes take a
  // little while.
  Numbering num{apic_ids, n, 0};
  for (int core = 1; core <= n; ++core) {
    if (!Prepare(core).ok()) {
      LOG_ERROR("smp: no memory to set up cores %d and above", core);
      break;
    }
    num.prepared = core;
  }
  cpu::ChooseIdle();
  NumberUntil(num, start + kSecondSipiNs);
  // The second SIPI, to the processors that have not answered yet. One
  // that is already running the trampoline ignores it (a SIPI only starts
  // a processor waiting for one).
  if (num.numbered < n) {
    for (int i = num.numbered; i < n; ++i) {
      if (AnsweredSlot(apic_ids[i], n) < 0) lapic::SendStartup(apic_ids[i], uint8_t(kTrampoline >> 12));
    }
    NumberUntil(num, start + kAnswerTimeoutNs);
  }

  uint64_t answered = fox::clock::NowNs();
  if (num.numbered < n) {
    // Close the slots nobody took or finished answering in; from here on
    // the slot states change only here. Then number the rest, leaving out
    // those that did not answer.
    for (int t = 0; t < n; ++t) {
      int expected = kEmpty;
      g_slots[t].state.compare_exchange_strong(expected, kRefused, std::memory_order_acq_rel);
    }
    for (; num.numbered < n; ++num.numbered) {
      int slot = AnsweredSlot(apic_ids[num.numbered], n);
      if (slot >= 0) {
        Release(num, slot);
        continue;
      }
      LOG_ERROR("smp: processor with APIC id %u did not answer INIT-SIPI-SIPI within %llu ms; continuing without it",
                apic_ids[num.numbered], (unsigned long long)(kAnswerTimeoutNs / 1000000));
    }
    // A processor that answered with an APIC id we did not start (a
    // firmware table out of step with the hardware) is not used.
    for (int t = 0; t < n; ++t) {
      if (g_slots[t].state.load(std::memory_order_acquire) == kArrived) {
        LOG_ERROR("smp: a processor answered with unexpected APIC id %u; left halted",
                  g_slots[t].apic_id.load(std::memory_order_relaxed));
        g_slots[t].state.store(kRefused, std::memory_order_release);
      }
    }
  }
  for (int core = num.next; core <= num.prepared; ++core) Unprepare(core);
  // The numbered cores set themselves up in parallel.
  uint64_t set_up = fox::clock::NowNs();
  for (int core = 1; core < num.next; ++core) {
    while (!g_cores[core].online.load(std::memory_order_acquire)) {
      if (fox::clock::NowNs() - set_up > kSetUpTimeoutNs)
        Panic("smp: core %d answered but did not finish its set-up", core);
      Nap();
    }
  }
  LOG_DEBUG("smp: %d of %d processors answered in %llu us, set up in %llu us", num.next - 1, n,
            (unsigned long long)((answered - start) / 1000),
            (unsigned long long)((fox::clock::NowNs() - set_up) / 1000));
  return num.next;
}

}  // namespace

Result<void> StartCores(int kernel_cores) {
  const auto& t = acpi::Topology();
  int present = 0;
  for (int i = 0; i < t.num_cpus; ++i) present += t.cpus[i].enabled;
  if (present == 0) present = 1;
  if (kernel_cores > present) {
    LOG_ERROR("boot: fox.kcores=%d but this node has %d core%s", kernel_cores, present, present == 1 ? "" : "s");
    return Error::kInvalidArgument;
  }
  percpu::SetKernelCores(kernel_cores);
  static uint32_t targets[core::kMaxCores];
  uint32_t self = lapic::Id();
  int n = 0;
  for (int i = 0; i < t.num_cpus && n < core::kMaxCores - 1; ++i) {
    if (t.cpus[i].enabled && t.cpus[i].apic_id != self) targets[n++] = t.cpus[i].apic_id;
  }
  int next = 1;
  if (n > 0) {
    next = StartAll(targets, n);
  } else {
    cpu::ChooseIdle();
  }
  if (n > 0 && next == 1) Panic("smp: none of the %d other processors answered INIT-SIPI-SIPI", n);
  if (kernel_cores > next) {
    LOG_WARN("smp: fox.kcores=%d but only %d cores started; all are kernel cores", kernel_cores, next);
    kernel_cores = next;
    percpu::SetKernelCores(kernel_cores);
  }
  g_started = next;
  LOG_INFO("smp: %d cores online: %d kernel, %d application", next, kernel_cores, next - kernel_cores);
  return Ok();
}

void AttachThreads() {
  for (int core = 1; core < g_started; ++core) {
    uintptr_t top = g_cores[core].stack;  // prepared by StartAll
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, reinterpret_cast<void*>(top - kThreadStackBytes), kThreadStackBytes);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    g_clone_target = core;
    int err = pthread_create(&thread, &attr, CoreThread, reinterpret_cast<void*>(intptr_t(core)));
    g_clone_target = -1;
    pthread_attr_destroy(&attr);
    if (err != 0) Panic("smp: pthread_create for core %d failed: %d", core, err);
  }
}

int64_t Clone(const syscall::CloneArgs& args) {
  constexpr uint64_t kCloneVm = 0x100, kCloneSetTls = 0x80000, kParentSetTid = 0x100000, kChildSetTid = 0x1000000;
  int core = g_clone_target;
  if (core < 1 || !(args.flags & kCloneVm) || !(args.flags & kCloneSetTls)) {
    return -11;  // EAGAIN: threads are created by the runtime, one per core
  }
  Core& c = g_cores[core];
  if (c.has_thread.load(std::memory_order_acquire)) return -11;
  int64_t tid = core + 1;
  if (args.flags & kParentSetTid) *reinterpret_cast<int*>(args.parent_tid) = int(tid);
  if (args.flags & kChildSetTid) *reinterpret_cast<int*>(args.child_tid) = int(tid);
  c.thread = args;
  c.has_thread.store(true, std::memory_order_release);
  lapic::SendIpi(c.local->apic_id, lapic::kWakeVector);  // exactly one: ApEntry waits for it
  return tid;
}

}  // namespace fox::smp
