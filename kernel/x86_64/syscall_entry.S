// Entry for the SYSCALL instruction executed in ring 0 by the C library
// (musl issues Linux system calls; fox emulates the few it needs, see
// syscall.cc). SYSCALL leaves RSP alone, so we first step over the caller's
// 128-byte red zone. Like Linux we preserve every register but RAX, RCX and
// R11, including the vector registers (musl's inline assembly assumes so).

  .section .text
  .global syscall_entry
syscall_entry:
  leaq -128(%rsp), %rsp
  pushq %rcx               // return address
  pushq %r11               // caller's RFLAGS
  pushq %rbp
  movq %rsp, %rbp
  pushq %r9                // SyscallArgs, lowest address first: nr, a0..a5
  pushq %r8
  pushq %r10
  pushq %rdx
  pushq %rsi
  pushq %rdi
  pushq %rax
  movq %rsp, %rdi          // SyscallArgs*
  pushq %rbx
  movq %rsp, %rbx
  subq $512, %rsp
  andq $-64, %rsp
  fxsave64 (%rsp)
  cld
  call SyscallDispatch     // returns the result in RAX
  fxrstor64 (%rsp)
  movq %rbx, %rsp
  popq %rbx
  addq $8, %rsp            // nr
  popq %rdi
  popq %rsi
  popq %rdx
  popq %r10
  popq %r8
  popq %r9
  popq %rbp
  popq %r11
  popq %rcx
  pushq %r11               // still 128 bytes below the caller's stack
  popfq
  leaq 128(%rsp), %rsp     // LEA leaves the flags alone
  jmpq *%rcx
