// The C and C++ runtime (native): musl's startup code runs unmodified on a
// fabricated Linux process stack (argv, an empty environment, an auxiliary
// vector pointing at our program headers), which sets up TLS through
// arch_prctl, runs the global constructors and calls main; exit() runs the
// destructors and ends in exit_group, which stops the node.
#pragma once

#include "fox/cmdline.h"

namespace fox::runtime {

// Boot step: the main stack (fox.stack bytes, guard page below) and the
// boot core's event loop, with the C library's start as its first event;
// `before_libc` runs first there (interrupts on): the boot's steps that can
// wait until then (collecting the other cores, which start meanwhile). Needs
// neither the clock nor the timer, so that it runs while their calibration
// still measures.
void PrepareMain(CommandLine& cmdline, void (*before_libc)());

// Last boot step: runs the boot core's event loop, which enters the C
// library, which calls the application's main.
[[noreturn]] void RunMain();

// TSC when main was called (for the boot benchmark).
uint64_t MainTsc();

// The boot banner is out (the core that printed it, before it releases the
// console). The "entry to main took" line comes after it: printed here when
// main has already started (another core printed the banner), else by main's
// core as main starts; so main never waits to format it.
void BannerPrinted();

}  // namespace fox::runtime
