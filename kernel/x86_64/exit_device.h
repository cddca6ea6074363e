// Stopping the node with a status the host can see.
#pragma once

namespace fox::exit_device {

// Writes `status` to QEMU's isa-debug-exit port (0xf4), making QEMU exit
// with 2*status+1; failing that powers off through ACPI; failing that halts.
// Safe in any context.
[[noreturn]] void PowerOff(int status);

}  // namespace fox::exit_device
