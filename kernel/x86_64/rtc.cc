#include "rtc.h"

#include <atomic>

#include "cpu.h"
#include "fox/irq_spinlock.h"
#include "interrupts.h"
#include "ioapic.h"
#include "percpu.h"
#include "fox/clock.h"
#include "fox/log.h"
#include "fox/once.h"
#include "fox/spinlock.h"

namespace fox::rtc {
namespace {

// Index register 0x70, then data 0x71: one pair at a time on any core (the
// periodic interrupt's handler acknowledges through the same pair).
IrqSpinLock g_cmos_lock;

uint8_t Cmos(uint8_t reg) {
  IrqSpinGuard guard(g_cmos_lock);
  x86::Outb(0x70, reg);
  return x86::Inb(0x71);
}

void SetCmos(uint8_t reg, uint8_t value) {
  IrqSpinGuard guard(g_cmos_lock);
  x86::Outb(0x70, reg);
  x86::Outb(0x71, value);
}

int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {  // proleptic Gregorian
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  unsigned yoe = unsigned(y - era * 400);
  unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + int64_t(doe) - 719468;
}

struct Date {
  uint8_t sec, min, hour, day, mon, year;
  bool operator==(const Date&) const = default;
};

Date ReadDate() {
  for (int i = 0; i < 100000 && (Cmos(0x0A) & 0x80); ++i) x86::Pause();  // update in progress
  return Date{Cmos(0x00), Cmos(0x02), Cmos(0x04), Cmos(0x07), Cmos(0x08), Cmos(0x09)};
}

// Unix time in ns at NowNs() == 0, from the RTC's date; 0 (1970) if the
// date is implausible.
uint64_t ReadEpochNs() {
  // Read until two readings agree: an update may begin between the
  // update-in-progress check and the last register.
  Date d = ReadDate();
  for (int i = 0; i < 3; ++i) {
    Date again = ReadDate();
    if (again == d) break;
    d = again;
  }
  uint8_t status_b = Cmos(0x0B);
  auto bcd = [&](uint8_t v) -> unsigned { return (status_b & 4) ? v : (v & 0x0F) + (v >> 4) * 10; };
  bool pm = d.hour & 0x80;
  unsigned h = bcd(d.hour & 0x7F);
  if (!(status_b & 2) && pm) h = (h % 12) + 12;
  unsigned y = 2000 + bcd(d.year);
  if (bcd(d.mon) < 1 || bcd(d.mon) > 12 || bcd(d.day) < 1 || bcd(d.day) > 31 || h > 23 || bcd(d.min) > 59 ||
      bcd(d.sec) > 59) {
    LOG_WARN("rtc: implausible date; wall clock starts at 1970");
    return 0;
  }
  int64_t days = DaysFromCivil(y, bcd(d.mon), bcd(d.day));
  uint64_t secs = uint64_t(days) * 86400 + h * 3600 + bcd(d.min) * 60 + bcd(d.sec);
  return secs * 1000000000ull - clock::NowNs();
}

Once g_epoch_read;
uint64_t g_epoch_ns = 0;  // written once, by g_epoch_read's set-up

}  // namespace

uint64_t BootEpochNs() {
  g_epoch_read.Run([] { g_epoch_ns = ReadEpochNs(); });
  return g_epoch_ns;
}

namespace {
std::atomic<uint64_t> g_ticks{0};
std::atomic<void (*)(interrupts::Frame*)> g_hook{nullptr};
SpinLock g_periodic_lock;  // Start and Stop
uint8_t g_vector GUARDED_BY(g_periodic_lock) = 0;
bool g_running GUARDED_BY(g_periodic_lock) = false;

bool OnInterrupt(interrupts::Frame* frame) {
  Cmos(0x0C);  // reading register C acknowledges the RTC
  g_ticks.fetch_add(1, std::memory_order_relaxed);
  if (auto hook = g_hook.load(std::memory_order_acquire)) hook(frame);
  return true;
}
}  // namespace

void SetTickHook(void (*hook)(interrupts::Frame* frame)) { g_hook.store(hook, std::memory_order_release); }

Result<void> StartPeriodicInterrupt(int rate) {
  if (rate < 3 || rate > 15) return Error::kInvalidArgument;
  SpinGuard guard(g_periodic_lock);
  if (g_running) return Error::kBusy;
  if (g_vector == 0) {
    FOX_TRY_ASSIGN(g_vector, interrupts::AllocateVector(OnInterrupt));
  }
  // 0x80 in the index keeps NMIs off while the registers change.
  SetCmos(0x8A, uint8_t((Cmos(0x8A) & 0xF0) | rate));
  SetCmos(0x8B, Cmos(0x8B) | 0x40);  // periodic interrupt enable
  Cmos(0x0C);
  FOX_TRY(ioapic::RouteIsa(8, g_vector, percpu::Of(0)->apic_id));
  g_running = true;
  return Ok();
}

void StopPeriodicInterrupt() {
  SpinGuard guard(g_periodic_lock);
  g_running = false;
  SetCmos(0x8B, Cmos(0x8B) & ~0x40);
  (void)ioapic::Mask(8);
}

uint64_t Ticks() { return g_ticks.load(std::memory_order_relaxed); }

}  // namespace fox::rtc
