// Per-core GDT and TSS (native). The TSS exists only for its IST stacks:
// every interrupt runs on one, so interrupted code's red zone survives.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fox/result.h"

namespace fox::gdt {

constexpr uint16_t kKernelCode = 0x08;
constexpr uint16_t kKernelData = 0x10;
constexpr uint16_t kTss = 0x18;

constexpr uint8_t kIstException = 1;  // CPU exceptions
constexpr uint8_t kIstCritical = 2;   // NMI, double fault, machine check
constexpr uint8_t kIstInterrupt = 3;  // device interrupts and IPIs
constexpr size_t kIstStackSize = 16384;

// Fills core `core`'s GDT and TSS and gives it its IST stacks (the boot
// core's are static; the others' come from the heap). Any core may prepare
// another's: the boot core prepares every processor's before starting them.
// Thread context. kNoMemory.
Result<void> PrepareCore(int core);
// Returns the IST stacks of a core prepared but never started.
void ReleaseCore(int core);
// Loads core `core`'s prepared GDT and TSS on the calling core.
void LoadCore(int core);
// Boot step for the boot core: PrepareCore(0) then LoadCore(0).
void InitBootCore();

}  // namespace fox::gdt
