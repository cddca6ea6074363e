#include "smp.h"

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <new>

#include "acpi.h"
#include "cpu.h"
#include "cpu_init.h"
#include "fox/boot_args.h"
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

// A core number's resources, prepared by the boot core before the
// processors start, so that a starting core takes no lock and allocates
// nothing (on an emulator with fewer host processors than cores, a lock
// holder descheduled by the host stalls every core waiting for the lock);
// then the hand-over of its C library thread.
struct Core {
  percpu::CoreLocal* local = nullptr;
  uint64_t root = 0;                // its PML4 (paging::NewCoreRoot)
  uintptr_t stack = 0;              // top of its thread's stack (AttachThreads)
  std::atomic<bool> set_up{false};  // a processor runs as this core, halted until its thread
  std::atomic<int> move_to{0};      // renumbering (Collect): the core number to run as instead
  std::atomic<bool> has_thread{false};
  std::atomic<void (*)()> job{nullptr};  // boot work it runs before its thread (StartBootJob)
  syscall::CloneArgs thread{};
};
// constinit: the C library runs dynamic initialisers long after the cores
// started, and one would wipe what they were given.
constinit Core g_cores[core::kMaxCores];
int g_started = 1;        // cores started, the boot core included
int g_clone_target = -1;  // core the next clone() goes to (boot core only)

// Parallel start, without waiting. Every processor gets INIT-SIPI-SIPI at
// once and takes a ticket in the trampoline (ticket t runs on boot stack
// g_stacks[t]); then it finds its own APIC id among the processors to start,
// in MADT order (g_targets), and runs as core number index + 1 at once: core
// numbers do not depend on which processor was quicker, and no processor
// waits for the boot core, which goes on with its own boot meanwhile and
// collects them before main (Collect). Its slot says whether it came:
// kArrived, or kRefused once Collect closed it (a processor that answers
// after that halts for good; the compare-and-swap on `state` decides each
// race between a late answer and the close). A processor that did not come
// leaves a gap in the numbers, which Collect closes by moving the cores
// after it down (Core::move_to), so that core numbers stay dense. Every
// processor gets its INIT from the boot core, but only the first its SIPI:
// once set up, it sends the others theirs, all at once. Under an emulator
// each block of the start-up code is translated the first time any core
// runs it; processors starting together each translated all of it, taking
// the host's processors from the boot core. (A chain, each processor
// starting the next once set up, was tried: it was no faster with 4 cores
// on 2 host processors and slower with 8.) A processor that has not
// answered 1 ms after its SIPI gets a second one, from Collect; if that is
// the first processor, Collect sends the others theirs too.
constexpr int kEmpty = -1, kArrived = -2, kRefused = -3;
struct Slot {
  std::atomic<int> state{kEmpty};
};
constinit Slot g_slots[core::kMaxCores];
uint32_t g_targets[core::kMaxCores];  // APIC ids of the processors started, MADT order
int g_num_targets = 0;
std::atomic<uint32_t> g_stray_apic_id{UINT32_MAX};  // a processor not in g_targets answered
std::atomic<bool> g_others_started{false};          // the processors after the first were sent their SIPI
// When each processor was sent its SIPI (TSC: it is not calibrated yet); 0
// before. Its second SIPI is due kSecondSipiNs after its first.
constinit std::atomic<uint64_t> g_sipi_tsc[core::kMaxCores]{};
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

// Gives back what Prepare took for a core number no processor runs as.
void Unprepare(int core) {
  Core& c = g_cores[core];
  paging::FreeCoreRoot(c.root);
  gdt::ReleaseCore(core);
  memory::FreeStack(c.stack, kThreadStackBytes);
  delete c.local;
  c.local = nullptr;
  c.root = 0;
  c.stack = 0;
  c.set_up.store(false, std::memory_order_relaxed);
  c.move_to.store(0, std::memory_order_relaxed);
}

void WakeBootCore();
void StartOthers();

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
  c.set_up.store(true, std::memory_order_release);
  WakeBootCore();
  if (core == 1) StartOthers();
  // Halted until Clone hands this core its thread and wakes it with one
  // kWakeVector IPI: spinning would take the machine (or, emulated, the
  // host's processors) from the boot core for the rest of its boot. STI's
  // one-instruction shadow keeps a wake-up that arrives before the HLT
  // pending until the HLT. The core goes on only once it has taken that
  // IPI, so none is left pending. Interrupts of its start-up are counted
  // apart (CoreLocal::starting): an application core's count stays 0.
  // Collect may move it to a lower number first (its own IPI). A boot job
  // (StartBootJob, core 1) comes with an IPI of its own vector, taken by the
  // same HLT at the latest, and runs before the thread.
  for (;;) {
    if (int to = c.move_to.load(std::memory_order_acquire); to != 0) ApEntry(to);
    if (auto job = c.job.load(std::memory_order_acquire)) {
      job();  // the thread may be handed over meanwhile: its IPI waits (interrupts are off)
      c.job.store(nullptr, std::memory_order_release);
      continue;
    }
    if (__atomic_load_n(&c.local->startup_wakes, __ATOMIC_RELAXED) != 0 &&
        c.has_thread.load(std::memory_order_acquire)) {
      break;
    }
    asm volatile("sti; hlt; cli" ::: "memory");
  }
  __atomic_store_n(&c.local->starting, false, __ATOMIC_RELEASE);  // interrupts are off (cli) here
  EnterThread(c.thread);
}

// The trampoline's call, on the boot stack of `ticket`. Touches nothing
// per-core (no GS base yet) until it has a core number.
extern "C" [[noreturn]] void ApStart(int /*ticket*/) {
  uint32_t apic_id = x86::InitialApicId();
  int index = 0;
  while (index < g_num_targets && g_targets[index] != apic_id) ++index;
  if (index == g_num_targets) {
    g_stray_apic_id.store(apic_id, std::memory_order_relaxed);
    x86::HaltForever();
  }
  int expected = kEmpty;
  if (!g_slots[index].state.compare_exchange_strong(expected, kArrived, std::memory_order_acq_rel)) {
    x86::HaltForever();  // too late: Collect closed the slot
  }
  ApEntry(index + 1);
}

// The core thread's body: this core's event loop.
void* CoreThread(void* arg) {
  int core = int(reinterpret_cast<intptr_t>(arg));
  if (core != core::Current()) Panic("smp: thread for core %d started on core %d", core, core::Current());
  event::ThisLoop()->Run();
}

// The boot core's waits for the others (their answers, their set-up):
// halted until one of them has news (WakeBootCore) or its timer,
// 500 us ahead, rather than spinning or polling a short timer: under an
// emulator each timer tick wakes two host threads (the boot core's and the
// one that runs timers), and on a host with as few processors as that the
// starting cores waited for a processor. Runs in the boot core's first event
// (interrupts on) and leaves them as it found them.
constexpr uint64_t kNapNs = 500000;
std::atomic<bool> g_boot_waiting{false};

template <typename Done>
void Nap(Done done) {
  bool enabled = x86::SaveAndDisableInterrupts();  // a wake-up taken before the HLT would leave it waiting
  g_boot_waiting.store(true, std::memory_order_seq_cst);
  if (!done()) {
    lapic::ArmTimer(x86::Rdtsc() + tsc::NsToTicks(kNapNs));
    asm volatile("sti; hlt; cli" ::: "memory");
    lapic::ArmTimer(0);
  }
  g_boot_waiting.store(false, std::memory_order_relaxed);
  x86::RestoreInterrupts(enabled);
}

// A starting core, once it has set itself up (its local APIC is) and after
// anything the boot core may be waiting for: wakes it if it waits.
void WakeBootCore() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (g_boot_waiting.load(std::memory_order_seq_cst)) lapic::SendIpi(percpu::Of(0)->apic_id, lapic::kWakeVector);
}

int g_deaf = -1;  // fox.smp_deaf - 1: the target not sent its SIPI (tests)

void SendSipi(int index) {
  if (index != g_deaf) lapic::SendStartup(g_targets[index], uint8_t(kTrampoline >> 12));
}

// A processor's first SIPI.
void Sipi(int index) {
  g_sipi_tsc[index].store(x86::Rdtsc(), std::memory_order_relaxed);
  SendSipi(index);
}

// The SIPIs of the processors after the first, once: from the first
// processor when it is set up, or from the boot core when the first did not
// answer in time.
void StartOthers() {
  if (g_others_started.exchange(true, std::memory_order_relaxed)) return;
  for (int i = 1; i < g_num_targets; ++i) Sipi(i);
}

bool Answered(int index) { return g_slots[index].state.load(std::memory_order_acquire) == kArrived; }

// A TSC reading taken before the TSC was calibrated, on NowNs's scale.
uint64_t AtNs(uint64_t tsc) { return tsc::TicksToNs(tsc - tsc::EntryTsc()); }

// Waits until every processor has answered, for up to kAnswerTimeoutNs from
// the first SIPI (sent at first_sipi_ns); true if all did. A processor that
// has not answered kSecondSipiNs after its SIPI gets a second one (one that
// is already running the trampoline ignores it: a SIPI only starts a
// processor waiting for one);
// if that is the first processor, the boot core also sends the others theirs.
// The others' time counts from their own SIPI, which the first processor
// sends only once it is set up (about 1 ms under an emulator).
bool AwaitAnswers(uint64_t first_sipi_ns) {
  uint64_t give_up = first_sipi_ns + kAnswerTimeoutNs;
  bool again[core::kMaxCores] = {};
  for (int next = 0;;) {
    while (next < g_num_targets && Answered(next)) ++next;
    if (next == g_num_targets) return true;
    uint64_t now = fox::clock::NowNs();
    if (now >= give_up) return false;
    for (int i = next; i < g_num_targets; ++i) {
      uint64_t sent = g_sipi_tsc[i].load(std::memory_order_relaxed);
      if (again[i] || Answered(i) || sent == 0 || now < AtNs(sent) + kSecondSipiNs) continue;
      if (i == 0) StartOthers();
      SendSipi(i);
      again[i] = true;
    }
    Nap([&] { return Answered(next); });
  }
}

// Waits until core `core` has set itself up (it answered: a matter of
// microseconds, else something is badly wrong).
void AwaitSetUp(int core, uint64_t since) {
  while (!g_cores[core].set_up.load(std::memory_order_acquire)) {
    if (fox::clock::NowNs() - since > kSetUpTimeoutNs)
      Panic("smp: core %d answered but did not finish its set-up", core);
    Nap([&] { return g_cores[core].set_up.load(std::memory_order_acquire); });
  }
}

// Whether the processors need the MP specification's 10 ms between INIT
// and SIPI. As Linux decides (smp_quirk_init_udelay): Intel's from family 6,
// AMD's from family 0FH and Hygon's from 18H do not, nor do virtual processors.
bool NeedsInitWait() {
  if ((x86::Cpuid(1).ecx >> 31) & 1) return false;  // a hypervisor's
  x86::CpuidResult v = x86::Cpuid(0);
  char vendor[12];
  std::memcpy(vendor, &v.ebx, 4);
  std::memcpy(vendor + 4, &v.edx, 4);
  std::memcpy(vendor + 8, &v.ecx, 4);
  uint32_t eax = x86::Cpuid(1).eax;
  uint32_t family = (eax >> 8) & 0xF;
  if (family == 0xF) family += (eax >> 20) & 0xFF;
  if (std::memcmp(vendor, "GenuineIntel", 12) == 0) return family < 6;
  if (std::memcmp(vendor, "AuthenticAMD", 12) == 0) return family < 0xF;
  if (std::memcmp(vendor, "HygonGenuine", 12) == 0) return family < 0x18;
  return true;
}

// Starts the processors `apic_ids` (MADT order) and returns without waiting
// for them (Collect does). Their resources first: a processor runs as soon
// as it answers.
void StartAll(const uint32_t* apic_ids, int n) {
  for (int i = 0; i < n; ++i) {
    g_stacks[i] = memory::AllocStack(kBootStackBytes, "the guard page below a core's boot stack");
    if (g_stacks[i] == 0 || !Prepare(i + 1).ok()) {
      if (g_stacks[i] != 0) memory::FreeStack(g_stacks[i], kBootStackBytes);
      LOG_ERROR("smp: no memory to set up cores %d and above; starting %d of %d other processors", i + 1, i, n);
      n = i;
      break;
    }
  }
  std::memcpy(g_targets, apic_ids, sizeof(uint32_t) * n);
  g_num_targets = n;
  std::memcpy(reinterpret_cast<void*>(kTrampoline), trampoline_start, size_t(trampoline_end - trampoline_start));
  *TrampolineField<uint32_t>(trampoline_cr3) = uint32_t(paging::SharedRoot());  // not core 0's own
  *TrampolineField<uint32_t>(trampoline_efer) = uint32_t(x86::ReadMsr(x86::kMsrEfer) & ((1u << 8) | (1u << 11)));
  *TrampolineField<uint64_t>(trampoline_stacks) = reinterpret_cast<uint64_t>(g_stacks);
  *TrampolineField<uint64_t>(trampoline_entry) = reinterpret_cast<uint64_t>(ApStart);
  *TrampolineField<uint32_t>(trampoline_slots) = uint32_t(n);
  *TrampolineField<uint32_t>(trampoline_ticket) = 0;
  asm volatile("mfence" ::: "memory");
  for (int i = 0; i < n; ++i) lapic::SendInit(apic_ids[i]);
  if (NeedsInitWait()) {
    // 10 ms, counted in TSC ticks of a processor of at most 5 GHz (the TSC
    // is not calibrated yet).
    for (uint64_t start = x86::Rdtsc(); x86::Rdtsc() - start < 50000000;) x86::Pause();
  }
  g_deaf = int(BootArgNumber("fox.smp_deaf", 0)) - 1;
  // The first processor alone; it starts the others once it is set up
  // (ApEntry), and they find its start-up code translated.
  if (n > 0) Sipi(0);
}

// Core numbers 1.. for the processors that answered, in MADT order; returns
// how many cores are online, the boot core included.
int Collect() {
  int n = g_num_targets;
  uint64_t sipi_ns = AtNs(g_sipi_tsc[0].load(std::memory_order_relaxed));
  if (!AwaitAnswers(sipi_ns)) {
    // Close the slots nobody took; from here on the slot states change only here.
    for (int i = 0; i < n; ++i) {
      int expected = kEmpty;
      if (g_slots[i].state.compare_exchange_strong(expected, kRefused, std::memory_order_acq_rel)) {
        LOG_ERROR("smp: processor with APIC id %u did not answer INIT-SIPI-SIPI within %llu ms; continuing without it",
                  g_targets[i], (unsigned long long)(kAnswerTimeoutNs / 1000000));
      }
    }
  }
  uint32_t stray = g_stray_apic_id.load(std::memory_order_relaxed);
  if (stray != UINT32_MAX) {
    LOG_ERROR("smp: a processor answered with unexpected APIC id %u; left halted", stray);  // firmware out of step
  }
  uint64_t answered = fox::clock::NowNs();
  // Number them densely: a core after a processor that did not answer moves
  // down, one at a time, into numbers already free (never answered, or left
  // by an earlier move and prepared afresh: a loaded TSS cannot be loaded again).
  int next = 1;
  for (int i = 0; i < n; ++i) {
    if (!Answered(i)) continue;
    int self = i + 1;
    AwaitSetUp(self, answered);
    if (self != next) {
      g_cores[self].move_to.store(next, std::memory_order_release);
      lapic::SendIpi(g_cores[self].local->apic_id, lapic::kWakeVector);
      AwaitSetUp(next, answered);
      Unprepare(self);
      if (!Prepare(self).ok()) Panic("smp: no memory to prepare core %d again", self);
    }
    ++next;
  }
  for (int core = next; core <= n; ++core) Unprepare(core);
  for (int core = 1; core < next; ++core) {
    event::CreateLoop(core);
    percpu::SetOnline(core, g_cores[core].local);
  }
  LOG_DEBUG("smp: %d of %d processors answered in %llu us, set up in %llu us", next - 1, n,
            (unsigned long long)((answered - sipi_ns) / 1000),
            (unsigned long long)((fox::clock::NowNs() - answered) / 1000));
  return next;
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
  if (n > 0) StartAll(targets, n);
  return Ok();
}

void CollectCores() {
  int n = g_num_targets;
  int next = n > 0 ? Collect() : 1;
  if (n > 0 && next == 1) Panic("smp: none of the %d other processors answered INIT-SIPI-SIPI", n);
  int kernel_cores = core::KernelCores();
  if (kernel_cores > next) {
    LOG_WARN("smp: fox.kcores=%d but only %d cores started; all are kernel cores", kernel_cores, next);
    kernel_cores = next;
    percpu::SetKernelCores(kernel_cores);
  }
  g_started = next;
  LOG_DEBUG("smp: %d cores online: %d kernel, %d application", next, kernel_cores, next - kernel_cores);
}

void StartBootJob(void (*job)()) {
  if (g_started < 2) Panic("smp: a boot job for core 1 on a node of one core");
  Core& c = g_cores[1];
  c.job.store(job, std::memory_order_release);
  // Its own vector: the wake vector is Clone's alone, so the two IPIs never
  // merge into one interrupt, and ApEntry goes on once it has taken Clone's.
  lapic::SendIpi(c.local->apic_id, lapic::kBootJobVector);
}

namespace {
// Core `core`'s C library thread (its clone() goes to the waiting core).
void CreateThread(int core) {
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
}  // namespace

void AttachThreads() {
  // Core 1's thread too while its boot job may still run: it takes its
  // thread once the job is done (ApEntry), and main does not wait for it.
  for (int core = 1; core < g_started; ++core) CreateThread(core);
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
