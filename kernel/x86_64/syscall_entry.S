// Entry for the SYSCALL instruction executed in ring 0 by the C library
// (musl issues Linux system calls; fox emulates the few it needs, see
// syscall.cc). SYSCALL leaves RSP alone, so we first step over the caller's
// 128-byte red zone. Like Linux we preserve every register but RAX, RCX and
// R11, including the vector registers (musl's inline assembly assumes so).

  .section .text
  .global syscall_entry
syscall_entry:
  // Unwind information, so that abort() can be traced back through the
  // system call into the C library and the application: the caller's RSP
  // is the CFA, its RIP is in RCX and then on our stack.
  .cfi_startproc simple
  .cfi_def_cfa %rsp, 0
  .cfi_register 16, 2      // return address (DWARF 16) in RCX (DWARF 2)
  leaq -128(%rsp), %rsp
  .cfi_adjust_cfa_offset 128
  pushq %rcx               // return address
  .cfi_adjust_cfa_offset 8
  .cfi_rel_offset 16, 0
  pushq %r11               // caller's RFLAGS
  .cfi_adjust_cfa_offset 8
  pushq %rbp
  .cfi_adjust_cfa_offset 8
  .cfi_rel_offset %rbp, 0
  movq %rsp, %rbp
  .cfi_def_cfa_register %rbp
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
  .cfi_endproc

// fox_enter_thread(const CloneArgs*): becomes the thread a clone() asked
// for: the caller's registers, RSP = new_sp, RAX = 0, interrupts on.
  .global fox_enter_thread
fox_enter_thread:
  movq 8(%rdi), %rsp
  movq 88(%rdi), %r11
  movq 48(%rdi), %rsi
  movq 56(%rdi), %rdx
  movq 64(%rdi), %r10
  movq 72(%rdi), %r8
  movq 80(%rdi), %r9
  movq 40(%rdi), %rdi
  xorl %eax, %eax
  xorl %ebp, %ebp
  sti
  jmpq *%r11
