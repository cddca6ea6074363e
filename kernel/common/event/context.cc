#include "context.h"

extern "C" char fox_context_start[];

namespace fox::event {

uintptr_t PrepareContext(uintptr_t stack_top, void (*entry)(void*), void* arg) {
  // Matches fox_switch_context's frame: control words, r15..rbp, return.
  auto* sp = reinterpret_cast<uint64_t*>(stack_top - 64);
  sp[0] = 0x037F00001F80ull;                  // MXCSR 0x1F80 (low half), x87 control word 0x037F
  sp[1] = 0;                                  // r15
  sp[2] = 0;                                  // r14
  sp[3] = reinterpret_cast<uint64_t>(arg);    // r13
  sp[4] = reinterpret_cast<uint64_t>(entry);  // r12
  sp[5] = 0;                                  // rbx
  sp[6] = 0;                                  // rbp: ends frame-pointer backtraces
  sp[7] = reinterpret_cast<uint64_t>(fox_context_start);
  return reinterpret_cast<uintptr_t>(sp);
}

}  // namespace fox::event
