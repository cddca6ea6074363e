// The C and C++ runtime (native): musl's startup code runs unmodified on a
// fabricated Linux process stack (argv, an empty environment, an auxiliary
// vector pointing at our program headers), which sets up TLS through
// arch_prctl, runs the global constructors and calls main; exit() runs the
// destructors and ends in exit_group, which stops the node.
#pragma once

#include "fox/cmdline.h"

namespace fox::runtime {

// Last boot step: switches to the main stack (fox.stack bytes, guard page
// below) and enters the C library, which calls the application's main.
// `before_libc` runs first there, as the boot core's first event (interrupts
// on): the boot's steps that can wait until the main stack and the event
// loop are set up (collecting the other cores, which start meanwhile).
[[noreturn]] void StartMain(CommandLine& cmdline, void (*before_libc)());

// TSC when main was called (for the boot benchmark).
uint64_t MainTsc();

}  // namespace fox::runtime
