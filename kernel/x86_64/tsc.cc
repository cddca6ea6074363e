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
  if (!((x86::Cpuid(0x40000001).eax >> 3) & 1)) return 0;                           // KVM_FEATURE_CLOCKSOURCE2
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

// Without an exact source we time the TSC against PIT channel 2
// (1.193182 MHz) over the rest of the boot instead of stalling it: Init starts
// a 54.9 ms one-shot countdown, FinishCalibration reads how far it got
// (at least 5 ms, waiting only if boot was faster than that). Both ends are
// paired readings (ReadPaired): on a host running many emulated nodes a vCPU
// is preempted for milliseconds at a time, and one preemption between reading
// the PIT and the TSC, or a boot longer than the countdown, once left nodes
// with clocks 20% off or on an assumed frequency (their timeouts fired early
// or late: false or late deaths). A measurement whose uncertainty is above
// kMaxErrorPpm is taken again, over 10 ms, up to kPitTries times.
constexpr uint32_t kPitHz = 1193182;
constexpr uint32_t kMinPitTicks = kPitHz / 200;  // 5 ms: +-1 tick is 170 ppm
constexpr int kPitTries = 40;
Paired<int64_t> g_pit_start{};
bool g_pit_pending = false;
uint64_t g_error_ppm = 0;

// Ticks elapsed on channel 2, or -1 once the countdown has run out.
int64_t PitElapsed() {
  x86::Outb(0x43, 0x80);  // latch channel 2
  uint32_t lo = x86::Inb(0x42);
  uint32_t hi = x86::Inb(0x42);
  if (x86::Inb(0x61) & 0x20) return -1;  // OUT high: expired
  return 0xFFFF - int64_t(lo | (hi << 8));
}

void StartPit() {
  uint8_t gate = x86::Inb(0x61);
  x86::Outb(0x61, (gate & ~0x02) | 0x01);  // speaker off, gate on
  x86::Outb(0x43, 0xB0);                   // channel 2, lo/hi byte, mode 0
  x86::Outb(0x42, 0xFF);
  x86::Outb(0x42, 0xFF);
  g_pit_start = ReadPaired(PitElapsed, 8);  // the first tries run code not yet translated (emulators)
  g_pit_pending = true;
}

bool Plausible(uint64_t hz) { return hz >= 100000000 && hz <= 20000000000ull; }

struct Measure {
  uint64_t hz;
  uint64_t error_ppm;
};

// Completes the measurement StartPit began, once `min_ticks` have elapsed
// and its uncertainty is at most kMaxErrorPpm (a reading whose spread is
// large, as the first run of this loop's code under an emulator, is followed
// by more, and the window widens), or else the best one by `max_ticks`:
// {0, _} if the countdown ran out (or there is no PIT).
Measure FinishPit(int64_t min_ticks, int64_t max_ticks) {
  g_pit_pending = false;
  Paired<int64_t> start = g_pit_start;
  if (start.value < 0) return {0, 1000000};
  Measure best{0, 1000000};
  for (uint64_t spins = 0; spins < 100000000; ++spins) {
    Paired<int64_t> now = ReadPaired(PitElapsed);
    if (now.value < 0) return best;
    int64_t ticks = now.value - start.value;
    if (ticks >= min_ticks) {
      uint64_t tsc = now.tsc - start.tsc;
      Measure m{tsc * kPitHz / uint64_t(ticks), PairedErrorPpm(start.spread, now.spread, tsc) + 1000000 / ticks};
      if (m.error_ppm < best.error_ppm) best = m;
      if (best.error_ppm <= kMaxErrorPpm || ticks >= max_ticks) return best;
    }
    x86::Pause();
  }
  return best;
}

// The background measurement if it is good enough, else the best of up to
// kPitTries synchronous ones of 10 to 20 ms.
Measure CalibratePit() {
  Measure best = FinishPit(kMinPitTicks, kPitHz / 50);
  for (int i = 0; i < kPitTries && !(Plausible(best.hz) && best.error_ppm <= kMaxErrorPpm); ++i) {
    StartPit();
    Measure m = FinishPit(kPitHz / 100, kPitHz / 50);
    if (Plausible(m.hz) && (!Plausible(best.hz) || m.error_ppm < best.error_ppm)) best = m;
  }
  return best;
}

void SetFrequency(uint64_t hz, const char* source) {
  g_hz = hz;
  g_source = source;
  g_mult = uint64_t(((unsigned __int128)1000000000 << 32) / g_hz);
}

}  // namespace

void Init() {
  struct {
    uint64_t (*probe)();
    const char* name;
  } sources[] = {{FromCpuid15, "cpuid-15h"}, {FromHypervisorLeaf, "hypervisor"}, {FromKvmClock, "kvmclock"}};
  for (auto& s : sources) {
    uint64_t hz = s.probe();
    if (Plausible(hz)) {
      SetFrequency(hz, s.name);
      return;
    }
  }
  StartPit();
}

void FinishCalibration() {
  if (g_pit_pending) {
    Measure m = CalibratePit();
    if (Plausible(m.hz)) {
      SetFrequency(m.hz, "pit");
      g_error_ppm = m.error_ppm;
    }
  }
  if (g_hz == 0) {
    SetFrequency(2000000000, "assumed");
    LOG_WARN("tsc: no way to measure the TSC frequency; assuming 2 GHz");
  }
  bool invariant = (x86::Cpuid(0x80000000).eax >= 0x80000007) && ((x86::Cpuid(0x80000007).edx >> 8) & 1);
  LOG_DEBUG("tsc: %llu.%03llu MHz from %s (+-%llu ppm)%s", (unsigned long long)(g_hz / 1000000),
            (unsigned long long)(g_hz / 1000 % 1000), g_source, (unsigned long long)g_error_ppm,
            invariant ? ", invariant" : ", not invariant");
  if (g_error_ppm > kMaxErrorPpm)
    LOG_WARN("tsc: calibration uncertain (%llu ppm): timeouts will be off by as much", (unsigned long long)g_error_ppm);
}

uint64_t FrequencyHz() { return g_hz; }
uint64_t ErrorPpm() { return g_error_ppm; }
const char* Source() { return g_source; }
uint64_t EntryTsc() { return boot_entry_tsc; }

uint64_t TicksToNs(uint64_t ticks) { return uint64_t(((unsigned __int128)ticks * g_mult) >> 32); }

uint64_t NsToTicks(uint64_t ns) { return uint64_t((unsigned __int128)ns * g_hz / 1000000000); }

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
