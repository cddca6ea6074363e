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

namespace fox::syscall {

// Boot step: enables SYSCALL (EFER.SCE) and points LSTAR at the entry.
void Init();

}  // namespace fox::syscall
