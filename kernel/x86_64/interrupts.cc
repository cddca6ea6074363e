#include "interrupts.h"

#include "cpu.h"
#include "gdt.h"
#include "panic.h"

extern "C" char isr_stubs[];

namespace fox::interrupts {
namespace {

struct __attribute__((packed)) Gate {
  uint16_t offset_low, selector;
  uint8_t ist, type_attr;
  uint16_t offset_mid;
  uint32_t offset_high, zero;
};

alignas(16) Gate g_idt[256];
Handler g_handlers[256];
uint64_t g_counts[256];  // core 0 only until per-core data exists

const char* const kNames[32] = {
    "divide error", "debug", "NMI", "breakpoint", "overflow", "bound range exceeded",
    "invalid opcode", "device not available", "double fault", "coprocessor segment overrun",
    "invalid TSS", "segment not present", "stack-segment fault", "general protection fault",
    "page fault", "reserved", "x87 floating-point error", "alignment check", "machine check",
    "SIMD floating-point error", "virtualization exception", "control protection exception",
    "reserved", "reserved", "reserved", "reserved", "reserved", "reserved",
    "hypervisor injection", "VMM communication", "security exception", "reserved"};

}  // namespace

const char* ExceptionName(uint64_t vector) { return vector < 32 ? kNames[vector] : "interrupt"; }

void Init() {
  for (int v = 0; v < 256; ++v) {
    uintptr_t addr = reinterpret_cast<uintptr_t>(isr_stubs) + 16 * v;
    uint8_t ist = gdt::kIstInterrupt;
    if (v < 32) ist = gdt::kIstException;
    if (v == 2 || v == 8 || v == 18) ist = gdt::kIstCritical;  // NMI, #DF, #MC
    g_idt[v] = Gate{uint16_t(addr), gdt::kKernelCode, ist, 0x8E /* present, interrupt gate */,
                    uint16_t(addr >> 16), uint32_t(addr >> 32), 0};
  }
  LoadIdt();
}

void LoadIdt() {
  struct __attribute__((packed)) {
    uint16_t limit;
    uint64_t base;
  } idtr{sizeof g_idt - 1, reinterpret_cast<uint64_t>(g_idt)};
  asm volatile("lidt %0" ::"m"(idtr));
}

void SetHandler(uint8_t vector, Handler handler) { g_handlers[vector] = handler; }

uint64_t Count(uint8_t vector) { return g_counts[vector]; }

}  // namespace fox::interrupts

extern "C" void InterruptDispatch(fox::interrupts::Frame* frame) {
  using namespace fox::interrupts;
  uint8_t v = uint8_t(frame->vector);
  ++g_counts[v];
  Handler h = g_handlers[v];
  if (h != nullptr && h(frame)) return;
  if (v < 32) fox::panic::FromException(frame);
  // An unexpected device vector: count it and carry on.
}
