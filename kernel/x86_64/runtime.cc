#include "runtime.h"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>
#include <pthread.h>

#include "cpu.h"
#include "exit_device.h"
#include "fox/exit.h"
#include "fox/log.h"
#include "fox/panic.h"
#include "memory.h"
#include "random.h"
#include "smp.h"
#include "../common/event/loop.h"
#include "../common/terminate.h"
#include "tsc.h"

extern "C" char __image_start[], __image_end[], __eh_frame_hdr_start[];
extern "C" int __libc_start_main(int (*main)(int, char**, char**), int argc, char** argv, void (*init)(),
                                 void (*fini)(), void (*ldso)());
extern "C" int AppMain(int argc, char** argv, char** envp) asm("main");

namespace fox::runtime {
namespace {

uint64_t g_main_tsc = 0;
// main is called through this, so that it stays a function of its own when
// link-time optimisation could inline it into MainTrampoline: backtraces and
// gdb name it, and boot/footprint.py counts the boot up to its first block.
int (*volatile g_app_main)(int, char**, char**) = AppMain;
CommandLine* g_cmdline = nullptr;
void (*g_before_libc)() = nullptr;

// The process stack musl expects: argc is passed separately; argv[], NULL,
// envp[] (empty), NULL, then auxv pairs.
uint64_t g_stack_vector[CommandLine::kMaxAppArgs + 64];
uint8_t g_at_random[16];

enum : uint64_t {
  AT_NULL = 0,
  AT_PHDR = 3,
  AT_PHENT = 4,
  AT_PHNUM = 5,
  AT_PAGESZ = 6,
  AT_ENTRY = 9,
  AT_UID = 11,
  AT_EUID = 12,
  AT_GID = 13,
  AT_EGID = 14,
  AT_HWCAP = 16,
  AT_SECURE = 23,
  AT_RANDOM = 25,
};

// 1: main has started and its line waits for the banner; 2: the banner is
// out (BannerPrinted). Whoever comes second prints the line.
std::atomic<int> g_entry_line{0};

void LogEntryToMain() {
  LOG_INFO("boot: entry to main took %llu us",
           (unsigned long long)(tsc::TicksToNs(g_main_tsc - tsc::EntryTsc()) / 1000));
}

int MainTrampoline(int argc, char** argv, char** envp) {
  smp::AttachThreads();  // other cores become C library threads
  g_main_tsc = x86::Rdtsc();
  // Under an emulator the first formatting of a line is a millisecond of
  // translation: the banner's core, still printing, does it for main.
  int expected = 0;
  if (!g_entry_line.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) LogEntryToMain();
  return g_app_main(argc, argv, envp);
}

void EnterLibc(void*) {
  g_before_libc();
  char** argv = g_cmdline->argv();
  int argc = g_cmdline->argc();
  size_t n = 0;
  for (int i = 0; i < argc; ++i) g_stack_vector[n++] = reinterpret_cast<uint64_t>(argv[i]);
  g_stack_vector[n++] = 0;  // end of argv
  g_stack_vector[n++] = 0;  // end of envp
  struct __attribute__((packed)) ElfHeader {
    uint8_t ident[16];
    uint16_t type, machine;
    uint32_t version;
    uint64_t entry, phoff, shoff;
    uint32_t flags;
    uint16_t ehsize, phentsize, phnum;
  };
  auto* eh = reinterpret_cast<const ElfHeader*>(__image_start);
  random::Fill(g_at_random, sizeof g_at_random);
  uint64_t aux[][2] = {{AT_PHDR, reinterpret_cast<uint64_t>(__image_start) + eh->phoff},
                       {AT_PHENT, eh->phentsize},
                       {AT_PHNUM, eh->phnum},
                       {AT_PAGESZ, 4096},
                       {AT_ENTRY, eh->entry},
                       {AT_UID, 0},
                       {AT_EUID, 0},
                       {AT_GID, 0},
                       {AT_EGID, 0},
                       {AT_SECURE, 0},
                       {AT_HWCAP, x86::Cpuid(1).edx},
                       {AT_RANDOM, reinterpret_cast<uint64_t>(g_at_random)},
                       {AT_NULL, 0}};
  for (auto& pair : aux) {
    g_stack_vector[n++] = pair[0];
    g_stack_vector[n++] = pair[1];
  }
  __libc_start_main(MainTrampoline, argc, reinterpret_cast<char**>(g_stack_vector), nullptr, nullptr, nullptr);
  Panic("runtime: __libc_start_main returned");  // it calls exit()
}

}  // namespace

uint64_t MainTsc() { return g_main_tsc; }

void BannerPrinted() {
  if (g_entry_line.exchange(2, std::memory_order_acq_rel) == 1) LogEntryToMain();
}

void PrepareMain(CommandLine& cmdline, void (*before_libc)()) {
  g_cmdline = &cmdline;
  g_before_libc = before_libc;
  terminate::Install();  // an exception nobody catches is reported, with where it was thrown
  size_t stack_bytes = cmdline.GetNumber("fox.stack", 1 << 20);
  uintptr_t top = memory::AllocStack(stack_bytes, "the guard page below the main stack (stack overflow)");
  if (top == 0) Panic("boot: cannot allocate the %zu-byte main stack", stack_bytes);
  // main is the first event of the boot core, on its own stack, so that it
  // may block like any event.
  event::CreateLoop(0);
  event::SpawnOnStack(top, EnterLibc, nullptr);
}

[[noreturn]] void RunMain() {
  x86::EnableInterrupts();
  event::ThisLoop()->Run();
}

}  // namespace fox::runtime

// Symbols libstdc++ and libgcc_eh (built against glibc) expect from the C
// library and musl lacks.
extern "C" {

// Never claim single-threadedness: other cores share the address space.
char __libc_single_threaded = 0;

uint32_t arc4random() { return uint32_t(fox::random::Next()); }

struct dl_find_object {
  unsigned long long dlfo_flags;
  void* dlfo_map_start;
  void* dlfo_map_end;
  void* dlfo_link_map;
  void* dlfo_eh_frame;
  unsigned long long reserved[7];
};

// The unwinder asks which object holds a PC: there is exactly one.
int _dl_find_object(void* pc, dl_find_object* result) {
  if (pc < static_cast<void*>(__image_start) || pc >= static_cast<void*>(__image_end)) return -1;
  std::memset(result, 0, sizeof *result);
  result->dlfo_map_start = __image_start;
  result->dlfo_map_end = __image_end;
  result->dlfo_eh_frame = __eh_frame_hdr_start;
  return 0;
}

// libgcc_eh and libstdc++ (built for glibc) reach the thread functions they
// use through weak references, and believe threads exist because the link
// forces __pthread_key_create in (cmake/native.cmake). A weak reference
// nothing else pulls out of musl's libc.a stays undefined, that is address 0:
// the unwinder's first step (uw_init_context) calls pthread_once, so in an
// image that used no pthread_once of its own every throw, caught or not,
// jumped to address 0 ("#0 ?"). These strong references bring them in.
// boot/gen_symtab.py --check fails the link if an image still has an
// undefined weak symbol.
[[gnu::used]] void* const fox_runtime_strong_refs[] = {
    reinterpret_cast<void*>(&pthread_once),
    reinterpret_cast<void*>(&__cxxabiv1::__cxa_pure_virtual),  // "pure virtual method called", then terminate
};

}  // extern "C"

namespace {
// Destructors of thread_local objects, per core. A core's list runs when that
// core's program ends: for the boot core, at exit(), before static
// destructors registered earlier (as on Linux).
struct TlsDestructor {
  void (*fn)(void*);
  void* object;
  TlsDestructor* next;
};
thread_local TlsDestructor* tls_destructors = nullptr;

void RunTlsDestructors() {
  while (TlsDestructor* d = tls_destructors) {
    tls_destructors = d->next;
    d->fn(d->object);
    std::free(d);
  }
}
}  // namespace

extern "C" int __cxa_thread_atexit_impl(void (*fn)(void*), void* object, void* /*dso*/) {
  static bool registered = false;
  if (!registered) {
    if (std::atexit(RunTlsDestructors) != 0) return -1;
    registered = true;
  }
  auto* d = static_cast<TlsDestructor*>(std::malloc(sizeof(TlsDestructor)));
  if (d == nullptr) return -1;
  *d = TlsDestructor{fn, object, tls_destructors};
  tls_destructors = d;
  return 0;
}
