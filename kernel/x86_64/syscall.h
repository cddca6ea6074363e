// Linux system-call emulation for the C library (native).
//
// fox links musl's libc.a unmodified. musl reaches the kernel through the
// SYSCALL instruction; on a fox node that lands in syscall_entry (ring 0 to
// ring 0) and SyscallDispatch emulates the calls a single-address-space
// unikernel can honour: console output, anonymous mmap from the page
// allocator, the TLS register, clocks, random bytes, exit and abort. Anything
// else returns -ENOSYS and is logged once. Runs with interrupts disabled on
// the caller's stack; never call it from an interrupt handler.
#pragma once

#include <cstdint>

namespace fox::syscall {

// The register state a clone() system call asks the new thread to start
// with: the caller's registers, except RSP (new_sp), RAX (0) and FS (tls).
struct CloneArgs {
  uint64_t flags, new_sp, parent_tid, child_tid, tls;
  uint64_t rdi, rsi, rdx, r10, r8, r9, rip;
};

// Boot step: enables SYSCALL (EFER.SCE) and points LSTAR at the entry.
void Init();

}  // namespace fox::syscall
