#include "interrupts.h"

#include <atomic>

#include "cpu.h"
#include "lapic.h"
#include "paging.h"
#include "percpu.h"
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
std::atomic<int> g_next_vector{kFirstDeviceVector};

const char* const kNames[32] = {"divide error",
                                "debug",
                                "NMI",
                                "breakpoint",
                                "overflow",
                                "bound range exceeded",
                                "invalid opcode",
                                "device not available",
                                "double fault",
                                "coprocessor segment overrun",
                                "invalid TSS",
                                "segment not present",
                                "stack-segment fault",
                                "general protection fault",
                                "page fault",
                                "reserved",
                                "x87 floating-point error",
                                "alignment check",
                                "machine check",
                                "SIMD floating-point error",
                                "virtualization exception",
                                "control protection exception",
                                "reserved",
                                "reserved",
                                "reserved",
                                "reserved",
                                "reserved",
                                "reserved",
                                "hypervisor injection",
                                "VMM communication",
                                "security exception",
                                "reserved"};

}  // namespace

const char* ExceptionName(uint64_t vector) { return vector < 32 ? kNames[vector] : "interrupt"; }

void Init() {
  for (int v = 0; v < 256; ++v) {
    uintptr_t addr = reinterpret_cast<uintptr_t>(isr_stubs) + 16 * v;
    uint8_t ist = gdt::kIstInterrupt;
    if (v < 32) ist = gdt::kIstException;
    if (v == 2 || v == 8 || v == 18) ist = gdt::kIstCritical;  // NMI, #DF, #MC
    g_idt[v] = Gate{uint16_t(addr),       gdt::kKernelCode,     ist, 0x8E /* present, interrupt gate */,
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

void InstallSystemHandlers() {
  // The timer and wake-up interrupts exist to end a HLT: nothing to do.
  SetHandler(lapic::kTimerVector, [](Frame*) { return true; });
  SetHandler(lapic::kWakeVector, [](Frame*) { return true; });
  SetHandler(lapic::kBootJobVector, [](Frame*) { return true; });
  SetHandler(lapic::kShootdownVector, [](Frame*) {
    paging::AckShootdown();
    return true;
  });
  SetHandler(lapic::kPanicVector, [](Frame*) -> bool { x86::HaltForever(); });
}

uint64_t Count(int core, uint8_t vector) {
  percpu::CoreLocal* c = percpu::Of(core);
  return c ? __atomic_load_n(&c->vector_counts[vector], __ATOMIC_RELAXED) : 0;
}

Result<uint8_t> AllocateVector(Handler handler) {
  int v = g_next_vector.fetch_add(1);
  if (v > kLastDeviceVector) return Error::kNoMemory;
  g_handlers[v] = handler;
  return uint8_t(v);
}

MsiMessage ComposeMsi(uint32_t apic_id, uint8_t vector) {
  // Fixed delivery, edge triggered, physical destination.
  return MsiMessage{0xFEE00000ull | (uint64_t(apic_id & 0xFF) << 12), vector};
}

}  // namespace fox::interrupts

extern "C" void InterruptDispatch(fox::interrupts::Frame* frame) {
  using namespace fox;
  using namespace fox::interrupts;
  uint8_t v = uint8_t(frame->vector);
  // GS is valid on every core before its IDT is loaded (percpu first).
  percpu::CoreLocal* local = percpu::Current();
  if (__builtin_expect(local->starting, false)) {
    if (v == lapic::kWakeVector) ++local->startup_wakes;
  } else {
    ++local->interrupts;
    ++local->vector_counts[v];
  }
  Handler h = g_handlers[v];
  if (v < 32) {
    if (h != nullptr && h(frame)) return;
    panic::FromException(frame);
  }
  if (v == lapic::kSpuriousVector) return;  // no EOI for spurious interrupts
  if (h != nullptr) h(frame);
  lapic::Eoi();
}
