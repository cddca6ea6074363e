#include "tsc.h"

#include "cpu.h"
#include "fox/clock.h"
#include "fox/log.h"

extern "C" uint64_t boot_entry_tsc;  // boot.S

namespace fox::tsc {
namespace {

uint64_t g_hz = 0;
uint64_t g_mult = 0;  // ns per tick in 32.32 fixed point
const char* g_source = "none";

uint64_t FromCpuid15() {
  if (x86::Cpuid(0).eax < 0x15) return 0;
  auto r = x86::Cpuid(0x15);
  if (r.eax == 0 || r.ebx == 0 || r.ecx == 0) return 0;
  return uint64_t(r.ecx) * r.ebx / r.eax;
}

bool IsHypervisor() { return (x86::Cpuid(1).ecx >> 31) & 1; }

uint64_t FromHypervisorLeaf() {
  if (!IsHypervisor()) return 0;
  uint32_t max = x86::Cpuid(0x40000000).eax;
  if (max < 0x40000010 || max > 0x400000FF) return 0;
  return uint64_t(x86::Cpuid(0x40000010).eax) * 1000;  // kHz
}

// KVM's pvclock publishes the multiplier it uses to turn TSC ticks into ns.
uint64_t FromKvmClock() {
  if (!IsHypervisor()) return 0;
  auto sig = x86::Cpuid(0x40000000);
  if (sig.ebx != 0x4b4d564b || sig.ecx != 0x564b4d56 || sig.edx != 0x4d) return 0;  // "KVMKVMKVM"
  if (!((x86::Cpuid(0x40000001).eax >> 3) & 1)) return 0;  // KVM_FEATURE_CLOCKSOURCE2
  struct alignas(64) PvClock {
    uint32_t version, pad0;
    uint64_t tsc_timestamp, system_time;
    uint32_t tsc_to_system_mul;
    int8_t tsc_shift;
    uint8_t flags, pad[2];
  };
  static PvClock clock;
  constexpr uint32_t kMsrKvmSystemTimeNew = 0x4b564d01;
  x86::WriteMsr(kMsrKvmSystemTimeNew, reinterpret_cast<uintptr_t>(&clock) | 1);
  uint32_t mul = 0;
  int shift = 0;
  for (int tries = 0; tries < 1000; ++tries) {
    uint32_t v = __atomic_load_n(&clock.version, __ATOMIC_ACQUIRE);
    if (v & 1) continue;
    mul = clock.tsc_to_system_mul;
    shift = clock.tsc_shift;
    if (__atomic_load_n(&clock.version, __ATOMIC_ACQUIRE) == v && mul != 0) break;
  }
  x86::WriteMsr(kMsrKvmSystemTimeNew, 0);  // stop the hypervisor writing to it
  if (mul == 0) return 0;
  // ns = ((ticks << shift) * mul) >> 32  =>  hz = 1e9 * 2^32 / mul / 2^shift
  unsigned __int128 hz = (unsigned __int128)1000000000 << 32;
  hz /= mul;
  return shift >= 0 ? uint64_t(hz >> shift) : uint64_t(hz << -shift);
}

// Times 10 ms of PIT channel 2 (1.193182 MHz) in TSC ticks.
uint64_t FromPit() {
  constexpr uint32_t kPitHz = 1193182;
  constexpr uint32_t kLatch = kPitHz / 100;
  uint8_t gate = x86::Inb(0x61);
  x86::Outb(0x61, (gate & ~0x02) | 0x01);
  x86::Outb(0x43, 0xB0);  // channel 2, lo/hi byte, mode 0
  x86::Outb(0x42, kLatch & 0xFF);
  x86::Outb(0x42, kLatch >> 8);
  uint64_t start = x86::Rdtsc();
  uint64_t spins = 0;
  while ((x86::Inb(0x61) & 0x20) == 0) {
    if (++spins > 100000000) return 0;  // no PIT
  }
  uint64_t ticks = x86::Rdtsc() - start;
  x86::Outb(0x61, gate);
  return ticks * 100;
}

}  // namespace

void Init() {
  struct {
    uint64_t (*probe)();
    const char* name;
  } sources[] = {{FromCpuid15, "cpuid-15h"},
                 {FromHypervisorLeaf, "hypervisor"},
                 {FromKvmClock, "kvmclock"},
                 {FromPit, "pit"}};
  for (auto& s : sources) {
    uint64_t hz = s.probe();
    if (hz >= 100000000 && hz <= 20000000000ull) {
      g_hz = hz;
      g_source = s.name;
      break;
    }
  }
  if (g_hz == 0) {
    g_hz = 2000000000;
    g_source = "assumed";
    LOG_WARN("tsc: no way to measure the TSC frequency; assuming 2 GHz");
  }
  g_mult = uint64_t(((unsigned __int128)1000000000 << 32) / g_hz);
  bool invariant = (x86::Cpuid(0x80000000).eax >= 0x80000007) && ((x86::Cpuid(0x80000007).edx >> 8) & 1);
  LOG_INFO("tsc: %llu.%03llu MHz from %s%s", (unsigned long long)(g_hz / 1000000),
           (unsigned long long)(g_hz / 1000 % 1000), g_source, invariant ? ", invariant" : ", not invariant");
}

uint64_t FrequencyHz() { return g_hz; }
const char* Source() { return g_source; }
uint64_t EntryTsc() { return boot_entry_tsc; }

uint64_t TicksToNs(uint64_t ticks) { return uint64_t(((unsigned __int128)ticks * g_mult) >> 32); }

void SpinNs(uint64_t ns) {
  uint64_t end = clock::NowNs() + ns;
  while (clock::NowNs() < end) x86::Pause();
}

}  // namespace fox::tsc

namespace fox::clock {
uint64_t NowNs() {
  uint64_t now = x86::Rdtsc();
  uint64_t entry = boot_entry_tsc;
  return now > entry ? tsc::TicksToNs(now - entry) : 0;
}
}  // namespace fox::clock
