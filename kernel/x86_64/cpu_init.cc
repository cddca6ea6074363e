#include "cpu_init.h"

#include "cpu.h"

namespace fox::cpu {

void InitFeatures() {
  uint64_t cr0 = x86::ReadCr0();
  cr0 &= ~(1ull << 2);           // EM: no x87 emulation
  cr0 |= (1ull << 1) | (1ull << 5) | (1ull << 16);  // MP, NE, WP
  cr0 &= ~(1ull << 3);           // TS
  x86::WriteCr0(cr0);
  x86::WriteCr4(x86::ReadCr4() | (1ull << 9) | (1ull << 10));  // OSFXSR, OSXMMEXCPT
  asm volatile("fninit");  // MXCSR resets to 0x1F80: SSE exceptions masked
}

}  // namespace fox::cpu
