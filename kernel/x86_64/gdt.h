// Per-core GDT and TSS (native). The TSS exists only for its IST stacks:
// every interrupt runs on one, so interrupted code's red zone survives.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fox::gdt {

constexpr uint16_t kKernelCode = 0x08;
constexpr uint16_t kKernelData = 0x10;
constexpr uint16_t kTss = 0x18;

constexpr uint8_t kIstException = 1;  // CPU exceptions
constexpr uint8_t kIstCritical = 2;   // NMI, double fault, machine check
constexpr uint8_t kIstInterrupt = 3;  // device interrupts and IPIs
constexpr size_t kIstStackSize = 16384;

// Boot step for the boot core; secondary cores call it with their index.
void InitCore(int core);

}  // namespace fox::gdt
