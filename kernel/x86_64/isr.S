// Interrupt and exception entry. Every vector has a 16-byte stub that pushes
// a zero error code where the CPU pushes none, then the vector number, and
// jumps to isr_common, which saves the general registers and the x87/SSE
// state (the C library and application code use SSE freely) and calls
// InterruptDispatch(InterruptFrame*). Every gate uses an IST stack, so the
// interrupted code's red zone is never touched (libc and libstdc++ are
// compiled with a red zone).

  .section .text
  .align 16
  .global isr_stubs
isr_stubs:
  .set vec, 0
  .rept 256
  .align 16
  .if (vec == 8) || ((vec >= 10) && (vec <= 14)) || (vec == 17) || (vec == 21) || (vec == 29) || (vec == 30)
  .else
  pushq $0
  .endif
  pushq $vec
  jmp isr_common
  .set vec, vec + 1
  .endr

isr_common:
  pushq %rax
  pushq %rbx
  pushq %rcx
  pushq %rdx
  pushq %rsi
  pushq %rdi
  pushq %rbp
  pushq %r8
  pushq %r9
  pushq %r10
  pushq %r11
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, %rdi          // InterruptFrame*
  movq %rsp, %rbx          // callee-saved: remember the frame
  subq $512, %rsp
  andq $-64, %rsp
  fxsave64 (%rsp)
  cld
  call InterruptDispatch
  fxrstor64 (%rsp)
  movq %rbx, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %r11
  popq %r10
  popq %r9
  popq %r8
  popq %rbp
  popq %rdi
  popq %rsi
  popq %rdx
  popq %rcx
  popq %rbx
  popq %rax
  addq $16, %rsp           // vector, error code
  iretq
