// Cores: the neutral view of the processors this node runs on.
#pragma once

#include <cstdint>

namespace fox::core {

constexpr int kMaxCores = 256;

// Index of the calling core, in [0, Online()). Safe in any context.
int Current();
// Cores running fox code now.
int Online();
// Processors the platform reports (ACPI MADT natively, FOX_CORES hosted).
int Present();

// Core roles (fox.kcores=K): cores [0, K) are kernel cores (device
// interrupts, timers, the console); the others are application cores, which
// take no device or timer interrupts and run only work queued to them.
int KernelCores();
bool IsKernelCore(int core);

// Interrupts (all vectors) core `core` has taken since it started running
// fox code (natively: its thread; the wake-up that hands a core its thread
// at boot is not counted).
uint64_t InterruptCount(int core);

}  // namespace fox::core
