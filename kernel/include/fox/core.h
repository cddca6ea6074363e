// Cores: the neutral view of the processors this node runs on.
#pragma once

namespace fox::core {

constexpr int kMaxCores = 256;

// Index of the calling core, in [0, Online()). Safe in any context.
int Current();
// Cores running fox code now.
int Online();
// Processors the platform reports (ACPI MADT natively, FOX_CORES hosted).
int Present();

}  // namespace fox::core
