// Thin wrappers over privileged x86-64 instructions. Native only; code above
// kernel/x86_64 never includes this (it uses the neutral headers in
// kernel/include/fox). All functions are safe in any context.
#pragma once

#include <cstdint>

namespace fox::x86 {

inline uint64_t ReadMsr(uint32_t msr) {
  uint32_t lo, hi;
  asm volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
  return (uint64_t(hi) << 32) | lo;
}
inline void WriteMsr(uint32_t msr, uint64_t value) {
  asm volatile("wrmsr" ::"c"(msr), "a"(uint32_t(value)), "d"(uint32_t(value >> 32)));
}

struct CpuidResult {
  uint32_t eax, ebx, ecx, edx;
};
inline CpuidResult Cpuid(uint32_t leaf, uint32_t subleaf = 0) {
  CpuidResult r;
  asm volatile("cpuid" : "=a"(r.eax), "=b"(r.ebx), "=c"(r.ecx), "=d"(r.edx) : "a"(leaf), "c"(subleaf));
  return r;
}

// This processor's APIC id as the firmware tables list it, without the
// local APIC: the 32-bit x2APIC id (leaf 0BH) when the CPU has that leaf,
// else the 8-bit initial APIC id (leaf 01H).
inline uint32_t InitialApicId() {
  if (Cpuid(0).eax >= 0xB) {
    CpuidResult r = Cpuid(0xB, 0);
    if (r.ebx != 0) return r.edx;
  }
  return Cpuid(1).ebx >> 24;
}

inline uint64_t Rdtsc() {
  uint32_t lo, hi;
  asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return (uint64_t(hi) << 32) | lo;
}

inline void Outb(uint16_t port, uint8_t v) { asm volatile("outb %0, %1" ::"a"(v), "Nd"(port)); }
inline void Outw(uint16_t port, uint16_t v) { asm volatile("outw %0, %1" ::"a"(v), "Nd"(port)); }
inline void Outl(uint16_t port, uint32_t v) { asm volatile("outl %0, %1" ::"a"(v), "Nd"(port)); }
inline uint8_t Inb(uint16_t port) {
  uint8_t v;
  asm volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
  return v;
}
inline uint16_t Inw(uint16_t port) {
  uint16_t v;
  asm volatile("inw %1, %0" : "=a"(v) : "Nd"(port));
  return v;
}

inline uint64_t ReadCr0() {
  uint64_t v;
  asm volatile("mov %%cr0, %0" : "=r"(v));
  return v;
}
inline uint64_t ReadCr2() {
  uint64_t v;
  asm volatile("mov %%cr2, %0" : "=r"(v));
  return v;
}
inline uint64_t ReadCr3() {
  uint64_t v;
  asm volatile("mov %%cr3, %0" : "=r"(v));
  return v;
}
inline uint64_t ReadCr4() {
  uint64_t v;
  asm volatile("mov %%cr4, %0" : "=r"(v));
  return v;
}
inline void WriteCr0(uint64_t v) { asm volatile("mov %0, %%cr0" ::"r"(v) : "memory"); }
inline void WriteCr3(uint64_t v) { asm volatile("mov %0, %%cr3" ::"r"(v) : "memory"); }
inline void WriteCr4(uint64_t v) { asm volatile("mov %0, %%cr4" ::"r"(v) : "memory"); }
inline void InvalidatePage(uintptr_t va) { asm volatile("invlpg (%0)" ::"r"(va) : "memory"); }

inline void DisableInterrupts() { asm volatile("cli" ::: "memory"); }
inline void EnableInterrupts() { asm volatile("sti" ::: "memory"); }
// Masks interrupts; returns whether they were on (for RestoreInterrupts).
inline bool SaveAndDisableInterrupts() {
  uint64_t flags;
  asm volatile("pushfq; popq %0; cli" : "=r"(flags)::"memory");
  return (flags >> 9) & 1;
}
inline void RestoreInterrupts(bool enabled) {
  if (enabled) EnableInterrupts();
}
inline void Halt() { asm volatile("hlt" ::: "memory"); }
inline void Pause() { asm volatile("pause"); }
// MONITOR arms address-range monitoring of the line holding `address`;
// MWAIT then waits (C-state hint `hints`, extensions `extensions`) until
// that line is written, an interrupt arrives, or for no reason at all.
inline void Monitor(const volatile void* address) { asm volatile("monitor" ::"a"(address), "c"(0), "d"(0) : "memory"); }
inline void Mwait(uint32_t hints, uint32_t extensions) {
  asm volatile("mwait" ::"a"(hints), "c"(extensions) : "memory");
}
// MWAIT with interrupts enabled for exactly its duration (the STI shadow
// covers it, as in "sti; hlt"): an interrupt that is already pending is
// taken inside the wait instead of being lost before it.
inline void StiMwaitCli(uint32_t hints) { asm volatile("sti; mwait; cli" ::"a"(hints), "c"(0) : "memory"); }
[[noreturn]] inline void HaltForever() {
  for (;;) asm volatile("cli; hlt" ::: "memory");
}

constexpr uint32_t kMsrEfer = 0xC0000080;
constexpr uint32_t kMsrStar = 0xC0000081;
constexpr uint32_t kMsrLstar = 0xC0000082;
constexpr uint32_t kMsrFmask = 0xC0000084;
constexpr uint32_t kMsrFsBase = 0xC0000100;
constexpr uint32_t kMsrGsBase = 0xC0000101;
constexpr uint32_t kMsrKernelGsBase = 0xC0000102;

inline uint64_t FsBase() { return ReadMsr(kMsrFsBase); }
inline void SetFsBase(uint64_t v) { WriteMsr(kMsrFsBase, v); }

}  // namespace fox::x86
