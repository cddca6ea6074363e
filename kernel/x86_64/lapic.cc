#include "lapic.h"

#include <algorithm>

#include "cpu.h"
#include "fox/log.h"
#include "fox/panic.h"
#include "tsc.h"

namespace fox::lapic {
namespace {

constexpr uint32_t kMsrApicBase = 0x1B;
constexpr uint32_t kMsrTscDeadline = 0x6E0;
constexpr uintptr_t kDefaultMmio = 0xFEE00000;

// Register offsets (xAPIC MMIO); the x2APIC MSR is 0x800 + offset/16.
enum : uint32_t {
  kId = 0x20,
  kTpr = 0x80,
  kEoi = 0xB0,
  kSvr = 0xF0,
  kIcrLow = 0x300,
  kIcrHigh = 0x310,
  kLvtTimer = 0x320,
  kLvtLint0 = 0x350,
  kLvtLint1 = 0x360,
  kLvtError = 0x370,
  kTimerInitial = 0x380,
  kTimerCurrent = 0x390,
  kTimerDivide = 0x3E0,
};
constexpr uint32_t kMasked = 1u << 16;

bool g_x2apic = false;
bool g_tsc_deadline = false;
uintptr_t g_mmio = kDefaultMmio;
uint64_t g_apic_ticks_per_tsc_q32 = 0;  // one-shot mode: APIC ticks per TSC tick, 32.32

uint32_t Read(uint32_t reg) {
  if (g_x2apic) return uint32_t(x86::ReadMsr(0x800 + (reg >> 4)));
  return *reinterpret_cast<volatile uint32_t*>(g_mmio + reg);
}
void Write(uint32_t reg, uint32_t v) {
  if (g_x2apic) {
    x86::WriteMsr(0x800 + (reg >> 4), v);
    return;
  }
  *reinterpret_cast<volatile uint32_t*>(g_mmio + reg) = v;
}

void WriteIcr(uint32_t apic_id, uint32_t low) {
  if (g_x2apic) {
    asm volatile("mfence" ::: "memory");  // x2APIC ICR writes are not serializing
    x86::WriteMsr(0x830, (uint64_t(apic_id) << 32) | low);
    return;
  }
  while (Read(kIcrLow) & (1u << 12)) x86::Pause();  // previous IPI still pending
  Write(kIcrHigh, apic_id << 24);
  Write(kIcrLow, low);
}

// One-shot mode fallback: how fast the APIC timer counts, in TSC terms,
// measured over the boot core's boot: StartCalibration (InitCore, early in
// the boot) lets its timer count down (masked), and the first ArmTimer reads
// how far it got, waiting only for what is left of the window (1 ms, or as
// long as the start reading's spread needs: the first reading runs code an
// emulator has not translated yet). So the measurement overlaps the rest of
// the boot instead of stalling it. Both ends are paired readings
// (tsc::ReadPaired): a vCPU preempted between the two clocks under emulation
// once made timers fire 20% late. A measurement more uncertain than 1000 ppm
// (or one whose countdown ran out) is taken again over 2 ms, up to 40 times,
// keeping the best.
tsc::Paired<uint32_t> g_calibration_start{};
bool g_calibration_pending = false;
uint32_t g_calibration_apic_id = 0;

uint32_t ReadCurrent() { return Read(kTimerCurrent); }

void StartCalibration() {
  Write(kTimerDivide, 0xB);  // divide by 1
  Write(kLvtTimer, kMasked);
  Write(kTimerInitial, 0xFFFFFFFF);
  g_calibration_start = tsc::ReadPaired(ReadCurrent, 8);
  g_calibration_apic_id = Id();
  g_calibration_pending = true;
}

void FinishCalibrationNow() {
  if (Id() != g_calibration_apic_id) Panic("lapic: timer calibration finished on another core than it started");
  uint64_t best_ppm = ~0ull;
  for (int attempt = 0; attempt <= 40 && best_ppm > tsc::kMaxErrorPpm; ++attempt) {
    if (attempt > 0) StartCalibration();
    // 1 ms, then 2 ms; and long enough that the start reading's spread
    // alone leaves under tsc::kMaxErrorPpm / 2 (the first reading runs code the
    // emulator has not translated yet), but at most 4 times that: a start
    // reading a descheduled vCPU made slow is taken again rather than
    // waited out (a spread of milliseconds would ask for seconds).
    uint64_t base = tsc::FrequencyHz() / (attempt == 0 ? 1000 : 500);
    uint64_t wait = std::clamp(g_calibration_start.spread * (2000000 / tsc::kMaxErrorPpm), base, 4 * base);
    while (x86::Rdtsc() - g_calibration_start.tsc < wait) x86::Pause();
    auto end = tsc::ReadPaired(ReadCurrent, 8);
    uint64_t elapsed_apic = uint64_t(g_calibration_start.value) - end.value;
    uint64_t elapsed_tsc = end.tsc - g_calibration_start.tsc;
    if (end.value == 0 || end.value >= g_calibration_start.value || elapsed_tsc == 0) continue;  // ran out
    uint64_t ppm = tsc::PairedErrorPpm(g_calibration_start.spread, end.spread, elapsed_tsc) + 1000000 / elapsed_apic;
    if (ppm < best_ppm) {
      best_ppm = ppm;
      g_apic_ticks_per_tsc_q32 = (elapsed_apic << 32) / elapsed_tsc;
    }
  }
  Write(kTimerInitial, 0);
  g_calibration_pending = false;
  if (best_ppm == ~0ull) {
    g_apic_ticks_per_tsc_q32 = (uint64_t(1000000000) << 32) / tsc::FrequencyHz();  // QEMU's 1 GHz
    LOG_WARN("lapic: the timer could not be calibrated; assuming it counts at 1 GHz");
  } else if (best_ppm > tsc::kMaxErrorPpm) {
    LOG_WARN("lapic: timer calibration uncertain (%llu ppm): timers will fire off by as much",
             (unsigned long long)best_ppm);
  } else {
    // Logged here, not at InitCore: that runs before the boot arguments
    // (fox.log) are read. A TSC-deadline timer needs no calibration.
    LOG_DEBUG("lapic: %s, one-shot timer at %llu ticks per ms (+-%llu ppm)", g_x2apic ? "x2APIC" : "xAPIC",
              (unsigned long long)(((tsc::FrequencyHz() / 1000) * g_apic_ticks_per_tsc_q32) >> 32),
              (unsigned long long)best_ppm);
  }
}

}  // namespace

void InitCore() {
  static bool first = true;
  if (first) {
    auto r = x86::Cpuid(1);
    g_x2apic = (r.ecx >> 21) & 1;
    g_tsc_deadline = (r.ecx >> 24) & 1;
  }
  uint64_t base = x86::ReadMsr(kMsrApicBase);
  base |= 1u << 11;  // global enable
  if (g_x2apic) base |= 1u << 10;
  x86::WriteMsr(kMsrApicBase, base);
  if (!g_x2apic) g_mmio = base & ~uintptr_t(0xFFF);
  Write(kTpr, 0);
  Write(kLvtLint0, kMasked);
  Write(kLvtLint1, kMasked);
  Write(kLvtError, kMasked);
  Write(kLvtTimer, kMasked);
  Write(kSvr, (1u << 8) | kSpuriousVector);  // software enable
  if (first) {
    if (!g_tsc_deadline) StartCalibration();
    first = false;
  }
}

void FinishCalibration() {
  if (g_calibration_pending) FinishCalibrationNow();
}

uint32_t Id() { return g_x2apic ? Read(kId) : Read(kId) >> 24; }
bool IsX2Apic() { return g_x2apic; }

void Eoi() { Write(kEoi, 0); }

void SendIpi(uint32_t apic_id, uint8_t vector) { WriteIcr(apic_id, (1u << 14) | vector); }

void SendInit(uint32_t apic_id) { WriteIcr(apic_id, (5u << 8) | (1u << 14)); }

void SendStartup(uint32_t apic_id, uint8_t page) { WriteIcr(apic_id, (6u << 8) | (1u << 14) | page); }

void ArmTimer(uint64_t tsc_deadline) {
  if (g_calibration_pending) [[unlikely]]
    FinishCalibrationNow();
  if (g_tsc_deadline) {
    Write(kLvtTimer, (2u << 17) | kTimerVector);
    x86::WriteMsr(kMsrTscDeadline, tsc_deadline);
    return;
  }
  if (tsc_deadline == 0) {
    Write(kTimerInitial, 0);
    return;
  }
  uint64_t now = x86::Rdtsc();
  uint64_t delta = tsc_deadline > now ? tsc_deadline - now : 1;
  uint64_t ticks = uint64_t(((unsigned __int128)delta * g_apic_ticks_per_tsc_q32) >> 32);
  if (ticks == 0) ticks = 1;
  if (ticks > 0xFFFFFFFF) ticks = 0xFFFFFFFF;  // fires early; the loop re-arms
  Write(kTimerDivide, 0xB);
  Write(kLvtTimer, kTimerVector);  // one-shot
  Write(kTimerInitial, uint32_t(ticks));
}

void DisableTimer() {
  if (g_tsc_deadline) x86::WriteMsr(kMsrTscDeadline, 0);
  Write(kTimerInitial, 0);
  Write(kLvtTimer, kMasked);
}

}  // namespace fox::lapic
