// Ending a node. On QEMU the status reaches the host through the isa-debug-exit
// device (QEMU exits with 2*status+1); on hardware the node powers off through
// ACPI. Hosted: the process exits with the status.
#pragma once

namespace fox {

constexpr int kExitSuccess = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;    // bad boot or application arguments
constexpr int kExitFenced = 3;   // the job declared this node dead: it stopped (fail-stop)
constexpr int kExitPanic = 125;  // a panic or abort(); QEMU exits with 251

// Ends the program like std::exit: atexit handlers and static destructors run
// and stdio is flushed, then the node stops with `status` (0-127). Call it
// from the main context, not from an interrupt handler.
[[noreturn]] void Exit(int status);

}  // namespace fox
