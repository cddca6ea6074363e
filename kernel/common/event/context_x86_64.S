// Context switch for event contexts (see context.h).
  .text
  .global fox_switch_context
  .type fox_switch_context, @function
fox_switch_context:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size fox_switch_context, . - fox_switch_context

// First code of a new context: PrepareContext left entry in r12, arg in r13.
// The outermost frame of every event stack: its unwind entry says there is
// no return address, so unwinders (exceptions, backtraces, gdb) stop here
// instead of walking off the top of the stack.
  .global fox_context_start
  .type fox_context_start, @function
fox_context_start:
  .cfi_startproc
  .cfi_undefined rip
  movq %r13, %rdi
  callq *%r12
  ud2
  .cfi_endproc
  .size fox_context_start, . - fox_context_start
  .section .note.GNU-stack, "", @progbits
