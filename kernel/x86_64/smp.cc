#include "smp.h"

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstring>

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

extern "C" char trampoline_start[], trampoline_end[], trampoline_cr3[], trampoline_efer[], trampoline_stack[],
    trampoline_entry[], trampoline_core[], trampoline_alive[];

namespace fox::smp {
namespace {

constexpr uintptr_t kTrampoline = 0x8000;
constexpr size_t kBootStackBytes = 64 * 1024;   // until the core becomes a thread
constexpr size_t kThreadStackBytes = 256 * 1024;

// A core that has started and waits for its thread.
struct Waiting {
  percpu::CoreLocal* local = nullptr;  // allocated by the boot core
  std::atomic<bool> online{false};
  std::atomic<bool> has_thread{false};
  syscall::CloneArgs thread;
  uint64_t tid;
};
Waiting g_waiting[core::kMaxCores];
int g_started = 1;        // cores started, the boot core included
int g_clone_target = -1;  // core the next clone() goes to (boot core only)

template <typename T>
T* TrampolineField(char* symbol) {
  return reinterpret_cast<T*>(kTrampoline + (symbol - trampoline_start));
}

// Starts a thread on this core from a clone() register state (syscall_entry.S).
extern "C" [[noreturn]] void fox_enter_thread(const syscall::CloneArgs* args);
static_assert(offsetof(syscall::CloneArgs, new_sp) == 8 && offsetof(syscall::CloneArgs, rdi) == 40 &&
              offsetof(syscall::CloneArgs, rip) == 88, "fox_enter_thread's offsets");

[[noreturn]] void EnterThread(const syscall::CloneArgs& t) {
  x86::SetFsBase(t.tls);
  fox_enter_thread(&t);
}

extern "C" [[noreturn]] void ApEntry(int core) {
  bool kernel_core = core < core::KernelCores();
  percpu::CoreLocal* local = g_waiting[core].local;
  percpu::InitCore(local, core, kernel_core);  // first: the heap needs core::Current()
  gdt::InitCore(core);
  interrupts::LoadIdt();
  cpu::InitFeatures();
  syscall::Init();
  lapic::InitCore();
  local->apic_id = lapic::Id();  // the APIC's own view (x2APIC ids exceed CPUID's 8 bits)
  if (!kernel_core) lapic::DisableTimer();
  event::CreateLoop(core);
  percpu::SetOnline(core, local);
  Waiting& w = g_waiting[core];
  w.online.store(true, std::memory_order_release);
  while (!w.has_thread.load(std::memory_order_acquire)) x86::Pause();
  EnterThread(w.thread);
}

// The new thread's body: this core's event loop.
void* CoreThread(void* arg) {
  int core = int(reinterpret_cast<intptr_t>(arg));
  if (core != core::Current()) Panic("smp: thread for core %d started on core %d", core, core::Current());
  event::ThisLoop()->Run();
}

bool StartCore(int core, uint32_t apic_id) {
  uintptr_t stack = memory::AllocStack(kBootStackBytes, "the guard page below a core's boot stack");
  if (stack == 0) return false;
  if (g_waiting[core].local == nullptr) g_waiting[core].local = new percpu::CoreLocal{};
  *TrampolineField<uint32_t>(trampoline_cr3) = uint32_t(x86::ReadCr3());
  *TrampolineField<uint32_t>(trampoline_efer) = uint32_t(x86::ReadMsr(x86::kMsrEfer) & ((1u << 8) | (1u << 11)));
  *TrampolineField<uint64_t>(trampoline_stack) = stack;
  *TrampolineField<uint64_t>(trampoline_entry) = reinterpret_cast<uint64_t>(ApEntry);
  *TrampolineField<uint32_t>(trampoline_core) = uint32_t(core);
  auto* alive = TrampolineField<volatile uint32_t>(trampoline_alive);
  *alive = 0;
  asm volatile("mfence" ::: "memory");
  lapic::SendInit(apic_id);
  tsc::SpinNs(10000);  // modern processors need no 10 ms wait after INIT
  lapic::SendStartup(apic_id, uint8_t(kTrampoline >> 12));
  uint64_t start = fox::clock::NowNs();
  while (*alive == 0 && fox::clock::NowNs() - start < 1000000) x86::Pause();
  if (*alive == 0) lapic::SendStartup(apic_id, uint8_t(kTrampoline >> 12));  // the second SIPI
  while (!g_waiting[core].online.load(std::memory_order_acquire)) {
    if (fox::clock::NowNs() - start > 2000000000ull) return false;
    x86::Pause();
  }
  return true;
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
  std::memcpy(reinterpret_cast<void*>(kTrampoline), trampoline_start, size_t(trampoline_end - trampoline_start));
  uint32_t self = lapic::Id();
  int next = 1;
  for (int i = 0; i < t.num_cpus && next < core::kMaxCores; ++i) {
    if (!t.cpus[i].enabled || t.cpus[i].apic_id == self) continue;
    if (StartCore(next, t.cpus[i].apic_id)) {
      ++next;
    } else {
      LOG_ERROR("smp: processor with APIC id %u did not start; continuing without it", t.cpus[i].apic_id);
    }
  }
  g_started = next;
  LOG_INFO("smp: %d cores online: %d kernel, %d application", next, kernel_cores < next ? kernel_cores : next,
           next > kernel_cores ? next - kernel_cores : 0);
  return Ok();
}

void AttachThreads() {
  for (int core = 1; core < g_started; ++core) {
    uintptr_t top = memory::AllocStack(kThreadStackBytes, "the guard page below a core's stack (stack overflow)");
    if (top == 0) Panic("smp: no memory for core %d's stack", core);
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
  Waiting& w = g_waiting[core];
  if (w.has_thread.load(std::memory_order_acquire)) return -11;
  int64_t tid = core + 1;
  if (args.flags & kParentSetTid) *reinterpret_cast<int*>(args.parent_tid) = int(tid);
  if (args.flags & kChildSetTid) *reinterpret_cast<int*>(args.child_tid) = int(tid);
  w.thread = args;
  w.has_thread.store(true, std::memory_order_release);
  return tid;
}

}  // namespace fox::smp
