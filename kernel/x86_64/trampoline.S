// Application-processor start-up code. smp.cc copies [trampoline_start,
// trampoline_end) to physical 0x8000, fills in the data words at its end and
// sends INIT-SIPI-SIPI to every processor at once; each starts here in real
// mode at 0x8000, switches to protected mode, then long mode on the kernel's
// page tables. There it takes a ticket (an atomic increment: processors run
// this code together, so nothing here is written but the ticket), loads the
// boot stack the table gives that ticket, and calls ApStart(ticket). A
// ticket beyond the table (a processor smp.cc did not count on) halts.
// Addresses are computed relative to the copy at 0x8000.

#define TRAMPOLINE 0x8000
#define REL(x) ((x) - trampoline_start + TRAMPOLINE)

  .section .rodata
  .code16
  .global trampoline_start, trampoline_end
  .global trampoline_cr3, trampoline_efer, trampoline_stacks, trampoline_entry, trampoline_slots, trampoline_ticket
trampoline_start:
  cli
  cld
  xorw %ax, %ax
  movw %ax, %ds
  movw %ax, %es
  movw %ax, %ss
  lgdtl REL(tr_gdt_ptr)
  movl %cr0, %eax
  orl $1, %eax
  movl %eax, %cr0
  ljmpl $0x08, $REL(tr_protected)

  .code32
tr_protected:
  movw $0x10, %ax
  movw %ax, %ds
  movw %ax, %es
  movw %ax, %ss
  movl %cr4, %eax
  orl $((1 << 5) | (1 << 9) | (1 << 10)), %eax  // PAE, OSFXSR, OSXMMEXCPT
  movl %eax, %cr4
  movl REL(trampoline_cr3), %eax
  movl %eax, %cr3
  movl $0xC0000080, %ecx
  rdmsr
  orl REL(trampoline_efer), %eax  // LME and, where supported, NXE
  wrmsr
  movl %cr0, %eax
  andl $~((1 << 2) | (1 << 3)), %eax
  orl $0x80010023, %eax  // PG, WP, NE, MP, PE
  movl %eax, %cr0
  ljmpl $0x18, $REL(tr_long)

  .code64
tr_long:
  movw $0x10, %ax
  movw %ax, %ds
  movw %ax, %es
  movw %ax, %ss
  movl $1, %edi
  lock xaddl %edi, REL(trampoline_ticket)
  cmpl REL(trampoline_slots), %edi
  jae 1f
  movq REL(trampoline_stacks), %rax
  movq (%rax,%rdi,8), %rsp
  xorl %ebp, %ebp
  movq REL(trampoline_entry), %rax
  callq *%rax
1:
  cli
  hlt
  jmp 1b

  .align 16
tr_gdt:
  .quad 0
  .quad 0x00CF9A000000FFFF   // 0x08: 32-bit code
  .quad 0x00CF92000000FFFF   // 0x10: data
  .quad 0x00AF9A000000FFFF   // 0x18: 64-bit code
tr_gdt_ptr:
  .short tr_gdt_ptr - tr_gdt - 1
  .long REL(tr_gdt)
  .align 8
trampoline_cr3: .long 0
trampoline_efer: .long 0
trampoline_stacks: .quad 0  // uint64_t[trampoline_slots]: boot stack tops by ticket
trampoline_entry: .quad 0
trampoline_slots: .long 0
trampoline_ticket: .long 0
trampoline_end:
