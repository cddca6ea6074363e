// Multiboot entry: both boot protocols land in _start32 in 32-bit protected
// mode with paging off. We save the loader's magic and info pointer, check for
// long mode, load the page tables the image carries (the first 4 GiB
// identity-mapped), enter long mode, zero the BSS and call KernelMain(magic,
// info) on the boot stack. Everything else (the rest of the page tables,
// per-core GDT/TSS, IDT) is done in C++.
//
// One ELF64 image serves both loaders:
//  - multiboot1 (QEMU -kernel, iPXE): the a.out-kludge address fields tell the
//    loader to copy the file linearly from load_addr, so it never looks at the
//    64-bit ELF headers (QEMU refuses to load ELF64 otherwise);
//  - multiboot2 (GRUB): loads the ELF64 program headers and enters at e_entry.

#define MB1_MAGIC 0x1BADB002
#define MB1_FLAGS 0x00010003  // page-align modules, memory info, address fields
#define MB2_MAGIC 0xE85250D6

  .section .boot.header, "a"
  .align 4
mb1_header:
  .long MB1_MAGIC
  .long MB1_FLAGS
  .long -(MB1_MAGIC + MB1_FLAGS)
  .long mb1_header       // header_addr
  .long __image_start    // load_addr: the ELF header, file offset 0
  .long __load_end       // load_end_addr
  .long __bss_end        // bss_end_addr
  .long _start32         // entry_addr

  .align 8
mb2_header:
  .long MB2_MAGIC
  .long 0                // i386 protected mode
  .long mb2_end - mb2_header
  .long -(MB2_MAGIC + (mb2_end - mb2_header))
  // Entry address tag (type 3): where GRUB jumps.
  .align 8
  .short 3, 0
  .long 12
  .long _start32
  // End tag.
  .align 8
  .short 0, 0
  .long 8
mb2_end:

  .section .boot.text, "ax"
  .code32
  .global _start32
_start32:
  cli
  cld
  movl %eax, boot_magic
  movl %ebx, boot_info
  rdtsc
  movl %eax, boot_entry_tsc
  movl %edx, boot_entry_tsc + 4

  // Long mode and NX support: CPUID 0x80000001 EDX bits 29 and 20.
  movl $0x80000000, %eax
  cpuid
  cmpl $0x80000001, %eax
  jb no_long_mode
  movl $0x80000001, %eax
  cpuid
  testl $(1 << 29), %edx
  jz no_long_mode
  movl %edx, %ebp        // remember for NX

  movl %cr4, %eax
  orl $((1 << 5) | (1 << 9) | (1 << 10)), %eax  // PAE, OSFXSR, OSXMMEXCPT
  movl %eax, %cr4
  movl $fox_pml4, %eax   // the tables below: nothing to build
  movl %eax, %cr3
  movl $0xC0000080, %ecx // EFER
  rdmsr
  orl $(1 << 8), %eax    // LME
  testl $(1 << 20), %ebp
  jz 3f
  orl $(1 << 11), %eax   // NXE
3:
  wrmsr
  movl %cr0, %eax
  andl $~((1 << 2) | (1 << 3)), %eax  // EM, TS: SSE usable
  orl $0x80010023, %eax  // PG, WP, NE, MP, PE
  movl %eax, %cr0

  lgdt boot_gdt_ptr
  ljmp $0x08, $start64

no_long_mode:
  movl $no_long_mode_msg, %esi
4:
  lodsb
  testb %al, %al
  jz 5f
  movw $0x3f8, %dx
  outb %al, %dx
  jmp 4b
5:
  cli
  hlt
  jmp 5b

  .code64
start64:
  movw $0x10, %ax
  movw %ax, %ds
  movw %ax, %es
  movw %ax, %ss
  // Zero the BSS (loaders should, but a kludge loader may not). It holds
  // the boot stack: before anything is pushed. 64 bytes a step with SSE
  // (enabled above): under emulation a step costs about what one 8-byte
  // step of rep stos does (1.2 MiB, with lwIP's pools, which linker.ld now
  // keeps out: 0.28 ms of rep stosq under TCG). The
  // last step may run up to 48 bytes past __bss_end (16-byte aligned), still
  // inside the image's last page (__image_end is page-aligned).
  movq $__bss_start, %rdi
  movq $__bss_end, %rcx
  pxor %xmm0, %xmm0
7:
  cmpq %rcx, %rdi
  jae 8f
  movdqa %xmm0, (%rdi)
  movdqa %xmm0, 16(%rdi)
  movdqa %xmm0, 32(%rdi)
  movdqa %xmm0, 48(%rdi)
  addq $64, %rdi
  jmp 7b
8:
  xorw %ax, %ax
  movw %ax, %fs
  movw %ax, %gs
  movq $boot_stack_top, %rsp
  xorl %ebp, %ebp
  movl boot_magic, %edi
  movl boot_info, %esi
  call KernelMain
6:
  cli
  hlt
  jmp 6b

  .section .rodata
no_long_mode_msg:
  .asciz "fox: this CPU does not support x86-64 long mode\r\n"

  .align 16
boot_gdt:
  .quad 0
  .quad 0x00AF9A000000FFFF   // 0x08: 64-bit code
  .quad 0x00CF92000000FFFF   // 0x10: data
boot_gdt_end:
boot_gdt_ptr:
  .short boot_gdt_end - boot_gdt - 1
  .quad boot_gdt

  .section .data
  .align 8
  .global boot_entry_tsc
boot_entry_tsc: .quad 0
boot_magic: .long 0
boot_info: .long 0

  // The page tables of the first 4 GiB and the SAS range's top-level
  // entries, written by the assembler into the image: the loader copies
  // them with the rest, and no code builds them (under an emulator every
  // instruction of the boot is translated before it runs once; building
  // them took boot.S a 2048-step loop and paging::Init 160 instructions).
  // Identity map, 2 MiB pages, but the first 2 MiB in 4 KiB pages:
  // paging::Init unmaps page 0 (the BIOS data area is read before it) and
  // uses 1 GiB pages above the first GiB where the CPU has them. Kernel
  // code's view: paging.h.
  .section .data.page_tables, "aw"
  .align 4096
  .global fox_pml4, fox_pt0
fox_pml4:
  .quad fox_pdpt + 3     // [0, 512 GiB): present, writable
  .quad fox_sas_pdpts + 3
  .quad fox_sas_pdpts + 4096 + 3
  .quad fox_sas_pdpts + 2 * 4096 + 3
  .quad fox_sas_pdpts + 3 * 4096 + 3
  .fill 507, 8, 0
fox_pdpt:
  .quad fox_pd + 3, fox_pd + 4096 + 3, fox_pd + 2 * 4096 + 3, fox_pd + 3 * 4096 + 3
  .fill 508, 8, 0
fox_pd:
  .quad fox_pt0 + 3
  .set page, 1
  .rept 2047
  .quad (page << 21) | 0x83  // present, writable, 2 MiB page
  .set page, page + 1
  .endr
fox_pt0:
  .set page, 0
  .rept 512
  .quad (page << 12) | 3
  .set page, page + 1
  .endr

  .section .bss
  .align 4096
fox_sas_pdpts: .skip 4 * 4096  // empty: SAS segments map below them
boot_stack: .skip 65536
  .global boot_stack_top
boot_stack_top:
