// Panic reports. A panic may come from anywhere, including an exception in
// the middle of another panic or inside the console: the report uses only the
// polled console and the formatter, and a second panic stops at once.
#include "panic.h"

#include <atomic>
#include <cstdarg>
#include <unwind.h>

#include "cpu.h"
#include "fox/core.h"
#include "lapic.h"
#include "percpu.h"
#include "exit_device.h"
#include "fox/console.h"
#include "fox/exit.h"
#include "fox/format.h"
#include "fox/panic.h"
#include "paging.h"
#include "serial.h"
#include "symbols.h"
#include "../common/terminate.h"

extern "C" char __image_start[], __load_end[];

namespace fox::panic {
namespace {

std::atomic<int> g_panicking{0};
int g_panic_core = -1;

void PrintFrame(int index, uint64_t addr) {
  uint64_t offset = 0;
  const char* name = symbols::Lookup(addr, &offset);
  console::PrintFrame(index, addr, name, offset);
}

}  // namespace

void Begin() {
  x86::DisableInterrupts();
  if (g_panicking.fetch_add(1) != 0) {
    // Another core panics too, or the report itself faulted: stay quiet.
    if (g_panic_core != core::Current()) x86::HaltForever();
    const char msg[] = "\nPANIC while panicking; stopping\n";
    console::Write(msg, sizeof msg - 1);
    Stop();
  }
  g_panic_core = core::Current();
  // Stop the other cores so the report is the last thing on the console.
  for (int c = 0; c < core::kMaxCores; ++c) {
    percpu::CoreLocal* local = percpu::Of(c);
    if (local != nullptr && c != g_panic_core) lapic::SendIpi(local->apic_id, lapic::kPanicVector);
  }
  serial::Release();  // what the boot banner's core held back, then the report
}

void PrintBacktrace(uint64_t rip, uint64_t rbp) {
  console::Printf("backtrace:\n");
  PrintFrame(0, rip);
  uint64_t last = rip;
  int repeats = 0;
  for (int i = 1; i < 64; ++i) {
    // Follow the frame-pointer chain while it stays in mapped, aligned memory.
    if (rbp == 0 || (rbp & 7) != 0 || !paging::IsMapped(rbp) || !paging::IsMapped(rbp + 15)) break;
    uint64_t ret = reinterpret_cast<uint64_t*>(rbp)[1];
    uint64_t next = reinterpret_cast<uint64_t*>(rbp)[0];
    if (ret == 0) break;
    if (ret - 1 == last) {  // deep recursion: say so once instead of 60 lines
      ++repeats;
    } else {
      if (repeats > 0) console::Printf("  ... the frame above repeats %d more times\n", repeats);
      repeats = 0;
      PrintFrame(i, ret - 1);  // the call instruction, not the one after it
      last = ret - 1;
    }
    if (next <= rbp) break;  // stacks grow down: the chain must go up
    rbp = next;
  }
  if (repeats > 0) console::Printf("  ... the frame above repeats %d more times\n", repeats);
}

void PrintUnwoundBacktrace() {
  console::Printf("backtrace:\n");
  int index = 0;
  _Unwind_Backtrace(
      [](_Unwind_Context* context, void* arg) -> _Unwind_Reason_Code {
        int* i = static_cast<int*>(arg);
        uint64_t ip = _Unwind_GetIP(context);
        if (ip == 0 || *i >= 48) return _URC_END_OF_STACK;
        PrintFrame((*i)++, ip - 1);
        return _URC_NO_REASON;
      },
      &index);
}

void PrintStackScan(uint64_t rsp) {
  auto text_lo = reinterpret_cast<uint64_t>(__image_start), text_hi = reinterpret_cast<uint64_t>(__load_end);
  console::Printf("backtrace (stack scan; may include stale frames):\n");
  int found = 0;
  rsp &= ~uint64_t(7);
  for (uint64_t p = rsp; found < 24 && p < rsp + 16384 && paging::IsMapped(p); p += 8) {
    uint64_t w = *reinterpret_cast<const uint64_t*>(p);
    if (w < text_lo + 8 || w >= text_hi) continue;
    auto* code = reinterpret_cast<const uint8_t*>(w);
    bool after_call = code[-5] == 0xE8 ||                                 // call rel32
                      (code[-2] == 0xFF && (code[-1] & 0x38) == 0x10) ||  // call *%reg
                      (code[-3] == 0xFF && (code[-2] & 0x38) == 0x10) ||  // call *disp8(%reg)
                      (code[-6] == 0xFF && (code[-5] & 0x38) == 0x10) ||  // call *disp32(%reg)
                      (code[-7] == 0xFF && (code[-6] & 0x38) == 0x10);    // call *disp32(%reg,%idx)
    if (!after_call) continue;
    uint64_t offset;
    if (symbols::Lookup(w - 1, &offset) == nullptr) continue;
    PrintFrame(found++, w - 1);
  }
}

[[noreturn]] void FromException(interrupts::Frame* f) {
  Begin();
  uint64_t cr2 = x86::ReadCr2();
  console::Printf("\nPANIC on core %d: %s (vector %llu, error %#llx) at %#llx", core::Current(),
                  interrupts::ExceptionName(f->vector), (unsigned long long)f->vector, (unsigned long long)f->error,
                  (unsigned long long)f->rip);
  uint64_t offset = 0;
  if (const char* fn = symbols::Lookup(f->rip, &offset))
    console::Printf(" in %s+%#llx", fn, (unsigned long long)offset);
  console::Printf("\n");
  if (f->vector == 14) {
    console::Printf("page fault: %s address %#llx (%s, %s)%s\n",
                    (f->error & 2)    ? "write to"
                    : (f->error & 16) ? "execute at"
                                      : "read from",
                    (unsigned long long)cr2, (f->error & 1) ? "protection violation" : "page not present",
                    (f->error & 4) ? "user" : "kernel", cr2 < 4096 ? ": null pointer dereference" : "");
    if (const char* what = paging::DescribeAddress(cr2))
      console::Printf("page fault: %#llx is %s\n", (unsigned long long)cr2, what);
  }
  console::Printf("rax %016llx rbx %016llx rcx %016llx rdx %016llx\n", (unsigned long long)f->rax,
                  (unsigned long long)f->rbx, (unsigned long long)f->rcx, (unsigned long long)f->rdx);
  console::Printf("rsi %016llx rdi %016llx rbp %016llx rsp %016llx\n", (unsigned long long)f->rsi,
                  (unsigned long long)f->rdi, (unsigned long long)f->rbp, (unsigned long long)f->rsp);
  console::Printf("r8  %016llx r9  %016llx r10 %016llx r11 %016llx\n", (unsigned long long)f->r8,
                  (unsigned long long)f->r9, (unsigned long long)f->r10, (unsigned long long)f->r11);
  console::Printf("r12 %016llx r13 %016llx r14 %016llx r15 %016llx\n", (unsigned long long)f->r12,
                  (unsigned long long)f->r13, (unsigned long long)f->r14, (unsigned long long)f->r15);
  console::Printf("rip %016llx rflags %08llx cr2 %016llx cr3 %016llx\n", (unsigned long long)f->rip,
                  (unsigned long long)f->rflags, (unsigned long long)cr2, (unsigned long long)x86::ReadCr3());
  PrintBacktrace(f->rip, f->rbp);
  Stop();
}

[[noreturn]] void Stop() {
  console::Printf("fox: exit status %d (panic)\n", kExitPanic);
  exit_device::PowerOff(kExitPanic);
}

}  // namespace fox::panic

namespace fox::terminate {

void PlatformBegin() { panic::Begin(); }

const char* PlatformSymbol(uintptr_t ip, uintptr_t* offset) {
  uint64_t off = 0;
  const char* name = symbols::Lookup(ip, &off);
  *offset = off;
  return name;
}

[[noreturn]] void PlatformStop() { panic::Stop(); }

}  // namespace fox::terminate

namespace fox {

[[noreturn]] __attribute__((noinline)) void Panic(const char* fmt, ...) {
  panic::Begin();
  char buf[256];
  va_list args;
  va_start(args, fmt);
  FormatV(buf, sizeof buf, fmt, args);
  va_end(args);
  console::Printf("\nPANIC: %s\n", buf);
  panic::PrintUnwoundBacktrace();
  panic::Stop();
}

}  // namespace fox
