// Bringing up the other processors (native).
//
// Boot (StartCores, then CollectCores): every enabled processor the ACPI
// MADT lists is started with INIT-SIPI-SIPI through a real-mode trampoline,
// all of them at once, after the boot core has prepared every core number's
// resources (CoreLocal, page tables, GDT/TSS with IST stacks, thread stack),
// so that a starting core takes no lock and allocates nothing. Each finds its
// APIC id in MADT order and runs as that core number at once: it loads what
// was prepared for it, its IDT and local APIC, and halts until it is given
// its thread (no spinning: on an emulator the spinning cores would take the
// host's processors from the boot core). The boot core does not wait: it goes
// on with its own boot, sets up its main stack and event loop, and collects
// them in its first event, just before the banner (one that does not answer
// within 1 s is logged by APIC id and left out, and the cores after it move
// down so that core numbers stay dense). Where it must wait, it halts until
// the core it waits for wakes it (WakeBootCore). Core 1 then prints the
// banner (StartBootJob) while the boot core starts the C library and main.
// Once the C library runs (AttachThreads, before main), each waiting core becomes a C library
// thread — pthread_create on the boot core, its clone() system call handed
// to the waiting core — so TLS, errno and stdio locking work on every core,
// and enters its event loop. Cores [0, fox.kcores) are kernel cores; the
// rest are application cores with their timer masked and no device vectors.
#pragma once

#include <cstdint>

#include "fox/result.h"
#include "syscall.h"

namespace fox::smp {

// Boot step. `kernel_cores` from fox.kcores; kInvalidArgument (with a
// message logged) if the node has fewer cores. Starts the processors and
// returns without waiting for them (CollectCores does).
Result<void> StartCores(int kernel_cores);

// Boot step, after StartCores and the boot core's other steps: waits for
// the processors (a second SIPI after 1 ms, up to 1 s), numbers them
// densely in MADT order and marks them online.
void CollectCores();

// Boot core, after CollectCores: runs `job` on core 1 before its thread,
// while the boot core goes on. Core 1 must be online: on a node of one core
// the caller runs the work itself (calling this there is a panic). For boot
// work that only writes the console: on a serial port at 115200 baud each
// byte takes 87 us, and under an emulator the first formatting of a log
// line is a millisecond of translation. Nothing waits for the job:
// AttachThreads hands core 1 its thread, which it takes once the job is
// done, and main may start first (serial::HoldFor keeps the console's
// order).
void StartBootJob(void (*job)());

// Called from the C library's first thread before main (boot core).
void AttachThreads();

// Syscall layer: a clone() from pthread_create. Hands the new thread to the
// core waiting for one; returns its thread id or a negative errno.
int64_t Clone(const syscall::CloneArgs& args);

}  // namespace fox::smp
