#include "percpu.h"

#include <atomic>

#include "cpu.h"
#include "fox/core.h"
#include "fox/core_window.h"
#include "paging.h"

namespace fox {
namespace {
percpu::CoreLocal* g_cores[core::kMaxCores];
std::atomic<int> g_online{0};
int g_present = 1;
int g_kernel_cores = 1;
}  // namespace

void percpu::InitCore(CoreLocal* local, int index, bool kernel_core) {
  local->self = local;
  local->index = index;
  local->apic_id = x86::Cpuid(1).ebx >> 24;
  local->kernel_core = kernel_core;
  x86::WriteMsr(x86::kMsrGsBase, reinterpret_cast<uint64_t>(local));
}

percpu::CoreLocal* percpu::Of(int core) { return core >= 0 && core < core::kMaxCores ? g_cores[core] : nullptr; }

void percpu::SetOnline(int core, CoreLocal* local) {
  g_cores[core] = local;
  g_online.fetch_add(1, std::memory_order_release);
}
void percpu::SetPresent(int count) { g_present = count; }
void percpu::SetKernelCores(int count) { g_kernel_cores = count; }

int core::Current() {
  int32_t index;
  asm volatile("movl %%gs:8, %0" : "=r"(index));
  return index;
}
int core::Online() { return g_online.load(std::memory_order_acquire); }
int core::Present() { return g_present; }
int core::KernelCores() { return g_kernel_cores; }
bool core::IsKernelCore(int core) { return core >= 0 && core < g_kernel_cores; }

uint64_t core::InterruptCount(int core) {
  percpu::CoreLocal* c = percpu::Of(core);
  return c ? __atomic_load_n(&c->interrupts, __ATOMIC_RELAXED) : 0;
}

}  // namespace fox

// The per-core window (fox/core_window.h) is this core's page tables'
// window (paging.h). Identity-mapped memory: an address is its physical
// address.
void fox::core::MapWindow(const void* pages, size_t bytes, bool writable) {
  paging::MapCoreWindow(reinterpret_cast<uintptr_t>(pages), bytes, writable);
}
const void* fox::core::WindowPages() { return reinterpret_cast<const void*>(paging::CoreWindowTarget()); }
