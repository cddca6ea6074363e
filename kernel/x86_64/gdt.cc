#include "gdt.h"

#include <cstdlib>
#include <cstring>

#include "fox/panic.h"

namespace fox::gdt {
namespace {

struct __attribute__((packed)) Tss {
  uint32_t reserved0;
  uint64_t rsp[3];
  uint64_t reserved1;
  uint64_t ist[7];
  uint64_t reserved2;
  uint16_t reserved3, iomap_base;
};

constexpr int kMaxCores = 256;

struct alignas(64) CoreTables {
  uint64_t gdt[5];
  Tss tss;
};

CoreTables g_tables[kMaxCores];
alignas(16) uint8_t g_boot_ist[3][kIstStackSize];  // the boot core's IST stacks

}  // namespace

Result<void> PrepareCore(int core) {
  CoreTables& t = g_tables[core];
  std::memset(&t, 0, sizeof t);
  t.gdt[0] = 0;
  t.gdt[1] = 0x00AF9A000000FFFF;  // 64-bit code, ring 0
  t.gdt[2] = 0x00CF92000000FFFF;  // data
  uintptr_t tss = reinterpret_cast<uintptr_t>(&t.tss);
  uint64_t limit = sizeof(Tss) - 1;
  t.gdt[3] = (limit & 0xFFFF) | ((tss & 0xFFFFFF) << 16) | (uint64_t(0x89) << 40) | (((limit >> 16) & 0xF) << 48) |
             (((tss >> 24) & 0xFF) << 56);
  t.gdt[4] = tss >> 32;
  t.tss.iomap_base = sizeof(Tss);
  // The boot core's IST stacks are static (no heap yet).
  uint8_t* ist = core == 0 ? &g_boot_ist[0][0] : static_cast<uint8_t*>(std::aligned_alloc(64, 3 * kIstStackSize));
  if (ist == nullptr) return Error::kNoMemory;
  for (int i = 0; i < 3; ++i) t.tss.ist[i] = reinterpret_cast<uintptr_t>(ist + (i + 1) * kIstStackSize);
  return Ok();
}

void ReleaseCore(int core) {
  if (core != 0) std::free(reinterpret_cast<void*>(g_tables[core].tss.ist[0] - kIstStackSize));
  std::memset(&g_tables[core], 0, sizeof g_tables[core]);
}

void LoadCore(int core) {
  CoreTables& t = g_tables[core];
  struct __attribute__((packed)) {
    uint16_t limit;
    uint64_t base;
  } gdtr{sizeof t.gdt - 1, reinterpret_cast<uint64_t>(t.gdt)};
  asm volatile(
      "lgdt %0\n"
      "pushq %1\n"
      "leaq 1f(%%rip), %%rax\n"
      "pushq %%rax\n"
      "lretq\n"
      "1:\n"
      "movw %2, %%ax\n"
      "movw %%ax, %%ds\n"
      "movw %%ax, %%es\n"
      "movw %%ax, %%ss\n"
      "ltr %w3\n" ::"m"(gdtr),
      "i"(uint64_t(kKernelCode)), "i"(kKernelData), "r"(kTss)
      : "rax", "memory");
}

void InitBootCore() {
  if (!PrepareCore(0).ok()) Panic("gdt: cannot set up the boot core");  // static: cannot fail
  LoadCore(0);
}

}  // namespace fox::gdt
