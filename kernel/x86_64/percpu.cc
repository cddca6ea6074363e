#include "percpu.h"

#include <atomic>

#include "cpu.h"
#include "fox/core.h"
#include "fox/ebb/local_table.h"
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

// The Ebb table hook (fox/ebb/local_table.h, fixed address): each core's
// table is seen through its page-table window (paging.h). Identity-mapped
// memory, so a table's address is its physical address.
#if defined(FOX_EBB_TABLE_ADDRESS)
void fox::ebb::SetThisCoreTable(LocalTable* table) {
  paging::MapCoreWindow(reinterpret_cast<uintptr_t>(table), sizeof(LocalTable), table != EmptyTable());
}
fox::ebb::LocalTable* fox::ebb::ThisCoreBacking() {
  return reinterpret_cast<LocalTable*>(paging::CoreWindowTarget());
}
#endif
