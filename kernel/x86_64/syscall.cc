#include "syscall.h"

#include <cstdint>
#include <cstring>
#include <memory>

#include "cpu.h"
#include "fox/clock.h"
#include "fox/console.h"
#include "fox/core.h"
#include "fox/event.h"
#include "fox/exit.h"
#include "fox/timer.h"
#include "fox/format.h"
#include "fox/log.h"
#include "fox/panic.h"
#include "exit_device.h"
#include "memory.h"
#include "panic.h"
#include "random.h"
#include "smp.h"
#include "profile.h"
#include "rtc.h"

extern "C" char syscall_entry[];

namespace fox::syscall {
namespace {

struct Args {
  uint64_t nr, a[6];
  uint64_t rbp, rflags, rip;  // the caller's, for backtraces
};

// Linux x86-64 numbers and constants used below.
enum : uint64_t {
  kRead = 0,
  kWrite = 1,
  kClose = 3,
  kFstat = 5,
  kLseek = 8,
  kMmap = 9,
  kMprotect = 10,
  kMunmap = 11,
  kBrk = 12,
  kRtSigaction = 13,
  kRtSigprocmask = 14,
  kIoctl = 16,
  kWritev = 20,
  kSchedYield = 24,
  kMremap = 25,
  kMadvise = 28,
  kNanosleep = 35,
  kGetpid = 39,
  kExit = 60,
  kKill = 62,
  kUname = 63,
  kGetuid = 102,
  kGetgid = 104,
  kGeteuid = 107,
  kGetegid = 108,
  kSigaltstack = 131,
  kArchPrctl = 158,
  kGettid = 186,
  kTkill = 200,
  kFutex = 202,
  kSchedGetaffinity = 204,
  kSetTidAddress = 218,
  kClockGettime = 228,
  kClockGetres = 229,
  kClockNanosleep = 230,
  kExitGroup = 231,
  kTgkill = 234,
  kOpenat = 257,
  kNewfstatat = 262,
  kPrlimit64 = 302,
  kGetrandom = 318,
  kOpen = 2,
  kClone = 56,
  kSetRobustList = 273,
  kMembarrier = 324,
  kGetcwd = 79,
};
constexpr int64_t kEnoent = 2, kEbadf = 9, kEagain = 11, kEnomem = 12, kEinval = 22, kEnotty = 25, kEspipe = 29,
                  kErange = 34, kEnosys = 38;
constexpr uint64_t kSigAbrt = 6;

bool g_warned[512];

int64_t WriteConsole(uint64_t fd, const char* data, uint64_t n) {
  if (fd != 1 && fd != 2) return -kEbadf;
  console::Write(data, n);
  return int64_t(n);
}

int64_t Mmap(uint64_t addr, uint64_t len, uint64_t flags, int64_t fd) {
  constexpr uint64_t kMapFixed = 0x10, kMapAnonymous = 0x20;
  if (!(flags & kMapAnonymous) || fd != -1) return -kEnoent;  // there are no files to map
  if (flags & kMapFixed) return -kEnomem;                     // one address space: no fixed placement
  (void)addr;
  if (len == 0) return -kEinval;
  void* p = memory::AllocPagesZeroed(len);
  return p ? int64_t(reinterpret_cast<uintptr_t>(p)) : -kEnomem;
}

void FillTimespec(uint64_t ns, uint64_t* ts) {
  ts[0] = ns / 1000000000;
  ts[1] = ns % 1000000000;
}

// nanosleep (std::this_thread::sleep_for): inside an event the event blocks
// on a timer and the core runs other events meanwhile, with the caller's
// interrupt state; elsewhere (before the loop runs) it spins.
void Sleep(uint64_t ns, uint64_t caller_flags) {
  if (!event::InEvent()) {
    uint64_t end = clock::NowNs() + ns;
    while (clock::NowNs() < end) x86::Pause();
    return;
  }
  if (caller_flags & (1 << 9)) x86::EnableInterrupts();
  event::Block([ns](event::Continuation k) {
    auto shared = std::make_shared<event::Continuation>(std::move(k));
    timer::Start(ns, [shared] { shared->Resume(); });
  });
  x86::DisableInterrupts();  // as the syscall entry left them
}

[[noreturn]] void Abort(const Args& args) {
  // abort(), std::terminate: a panic with the caller's backtrace.
  panic::Begin();
  char line[64];
  size_t n = Format(line, sizeof line, "\nPANIC on core %d: abort() called\n", core::Current());
  console::Write(line, n);
  // The caller's stack pointer: above our saved registers and its red zone.
  panic::PrintStackScan(reinterpret_cast<uint64_t>(&args.rip + 1) + 128);
  panic::Stop();
}

}  // namespace

void Init() {
  x86::WriteMsr(x86::kMsrEfer, x86::ReadMsr(x86::kMsrEfer) | 1);  // SCE
  x86::WriteMsr(x86::kMsrStar, uint64_t(0x08) << 32);             // SYSCALL CS=0x08, SS=0x10
  x86::WriteMsr(x86::kMsrLstar, reinterpret_cast<uint64_t>(syscall_entry));
  x86::WriteMsr(x86::kMsrFmask, 0x47700);  // clear TF, IF, DF, IOPL, NT, AC
}

}  // namespace fox::syscall

extern "C" int64_t SyscallDispatch(fox::syscall::Args* args) {
  using namespace fox;
  using namespace fox::syscall;
  uint64_t* a = args->a;
  switch (args->nr) {
    case kRead: return a[0] == 0 ? 0 : -kEbadf;  // stdin is always at end of file
    case kWrite: return WriteConsole(a[0], reinterpret_cast<const char*>(a[1]), a[2]);
    case kWritev: {
      struct Iov {
        const char* base;
        uint64_t len;
      };
      auto* iov = reinterpret_cast<const Iov*>(a[1]);
      // One console write when the pieces fit together: musl writes a
      // stream's buffer and the bytes that overflowed it as two pieces (a
      // printf's line as "core 1 here (..., APIC id 2" and ")\n"), and
      // written apart another core's line could land between them
      // (vm.cores_deaf_first saw a log line there).
      char joined[2048];
      size_t length = 0;
      bool fits = true;
      for (uint64_t i = 0; i < a[2] && fits; ++i) {
        fits = iov[i].len <= sizeof joined - length;
        if (fits) {
          std::memcpy(joined + length, iov[i].base, iov[i].len);
          length += iov[i].len;
        }
      }
      if (fits) return WriteConsole(a[0], joined, length);
      int64_t total = 0;
      for (uint64_t i = 0; i < a[2]; ++i) {
        int64_t r = WriteConsole(a[0], iov[i].base, iov[i].len);
        if (r < 0) return r;
        total += r;
      }
      return total;
    }
    case kClose: return 0;
    case kLseek: return -kEspipe;
    case kIoctl:
      if (a[0] <= 2 && a[1] == 0x5413) {  // TIOCGWINSZ: the console is a terminal
        uint16_t ws[4] = {24, 80, 0, 0};
        std::memcpy(reinterpret_cast<void*>(a[2]), ws, sizeof ws);
        return 0;
      }
      return -kEnotty;
    case kFstat:
    case kNewfstatat: return -kEbadf;
    case kOpen:
    case kOpenat: return -kEnoent;
    case kGetcwd:  // there are no files: the working directory is the root
      if (a[1] < 2) return -kErange;
      std::memcpy(reinterpret_cast<char*>(a[0]), "/", 2);
      return 2;  // Linux counts the terminating NUL
    case kMmap: return Mmap(a[0], a[1], a[3], int64_t(a[4]));
    case kMunmap: memory::FreePages(reinterpret_cast<void*>(a[0]), a[1]); return 0;
    case kMprotect:
    case kMadvise:
    case kRtSigaction:
    case kRtSigprocmask:
    case kSigaltstack: return 0;
    case kMremap:
    case kBrk: return -kEnomem;
    case kSchedYield: x86::Pause(); return 0;
    case kGetpid: return 1;
    case kGettid:
    case kSetTidAddress: return 1 + core::Current();
    case kGetuid:
    case kGetgid:
    case kGeteuid:
    case kGetegid: return 0;
    case kUname: {
      char* u = reinterpret_cast<char*>(a[0]);
      std::memset(u, 0, 6 * 65);
      std::strcpy(u, "fox");
      std::strcpy(u + 65, "node");
      std::strcpy(u + 130, FOX_VERSION);
      std::strcpy(u + 195, FOX_VERSION);
      std::strcpy(u + 260, "x86_64");
      return 0;
    }
    case kArchPrctl:
      if (a[0] == 0x1002) {  // ARCH_SET_FS
        x86::SetFsBase(a[1]);
        return 0;
      }
      if (a[0] == 0x1003) {  // ARCH_GET_FS
        *reinterpret_cast<uint64_t*>(a[1]) = x86::FsBase();
        return 0;
      }
      return -kEinval;
    case kFutex: {
      int op = int(a[1] & 0x7F);
      if (op == 0 || op == 9) {  // WAIT, WAIT_BITSET: a spurious wake-up is allowed
        if (__atomic_load_n(reinterpret_cast<int*>(a[0]), __ATOMIC_SEQ_CST) != int(a[2])) return -kEagain;
        x86::Pause();
        return 0;
      }
      return 0;  // WAKE and friends: nobody sleeps
    }
    case kSchedGetaffinity: {
      uint64_t bytes = a[1] < 32 ? a[1] : 32;
      uint8_t mask[32] = {};
      for (int i = 0; i < core::Online() && i < 256; ++i) mask[i / 8] |= uint8_t(1 << (i % 8));
      std::memcpy(reinterpret_cast<void*>(a[2]), mask, bytes);
      return int64_t(bytes);
    }
    case kClockGettime:
      FillTimespec(clock::NowNs() + (a[0] == 0 ? rtc::BootEpochNs() : 0), reinterpret_cast<uint64_t*>(a[1]));
      return 0;
    case kClockGetres:
      if (a[1] != 0) FillTimespec(1, reinterpret_cast<uint64_t*>(a[1]));
      return 0;
    case kNanosleep:
    case kClockNanosleep: {
      auto* ts = reinterpret_cast<const uint64_t*>(args->nr == kNanosleep ? a[0] : a[2]);
      uint64_t ns = ts[0] * 1000000000 + ts[1];
      if (args->nr == kClockNanosleep && (a[1] & 1)) {  // TIMER_ABSTIME
        uint64_t now = clock::NowNs();
        ns = ns > now ? ns - now : 0;
      }
      Sleep(ns, args->rflags);
      return 0;
    }
    case kGetrandom: random::Fill(reinterpret_cast<void*>(a[0]), a[1]); return int64_t(a[1]);
    case kExit:
      // A thread ending: cores' threads run their event loops forever, so
      // this is a bug, not the program's end (that is exit_group).
      Panic("syscall: the thread of core %d exited (status %d)", core::Current(), int(a[0] & 0xFF));
    case kExitGroup: {
      int status = int(a[0] & 0xFF);
      profile::Report();
      LOG_INFO("fox: exit status %d", status);
      exit_device::PowerOff(status);
    }
    case kKill:
    case kTkill:
    case kTgkill:
      if (a[args->nr == kTgkill ? 2 : 1] == kSigAbrt) Abort(*args);
      return 0;
    case kPrlimit64: return -kEnosys;
    case kClone:
      return smp::Clone(CloneArgs{a[0], a[1], a[2], a[3], a[4], a[0], a[1], a[2], a[3], a[4], a[5], args->rip});
    case kSetRobustList: return 0;
    case kMembarrier: return 0;
    default: break;
  }
  if (args->nr < 512 && !g_warned[args->nr]) {
    g_warned[args->nr] = true;
    LOG_WARN("syscall: Linux system call %llu is not supported (called from %#llx)", (unsigned long long)args->nr,
             (unsigned long long)args->rip);
  }
  return -kEnosys;
}
