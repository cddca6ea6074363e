#include "percpu.h"

#include "cpu.h"
#include "fox/core.h"

namespace fox {
namespace {
int g_online = 0;
int g_present = 1;
}  // namespace

void percpu::InitCore(CoreLocal* local, int index) {
  local->self = local;
  local->index = index;
  local->apic_id = x86::Cpuid(1).ebx >> 24;
  x86::WriteMsr(x86::kMsrGsBase, reinterpret_cast<uint64_t>(local));
}

void percpu::SetOnline(int count) { g_online = count; }
void percpu::SetPresent(int count) { g_present = count; }

int core::Current() {
  int32_t index;
  asm volatile("movl %%gs:8, %0" : "=r"(index));
  return index;
}
int core::Online() { return g_online; }
int core::Present() { return g_present; }

}  // namespace fox
