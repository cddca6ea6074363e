#include "rtc.h"

#include <atomic>

#include "cpu.h"
#include "fox/irq_spinlock.h"
#include "interrupts.h"
#include "ioapic.h"
#include "percpu.h"
#include "fox/clock.h"
#include "fox/log.h"

namespace fox::rtc {
namespace {
uint64_t g_epoch_ns = 0;

uint8_t Cmos(uint8_t reg) {
  x86::Outb(0x70, reg);
  return x86::Inb(0x71);
}

int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {  // proleptic Gregorian
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  unsigned yoe = unsigned(y - era * 400);
  unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + int64_t(doe) - 719468;
}
}  // namespace

void Init() {
  for (int i = 0; i < 100000 && (Cmos(0x0A) & 0x80); ++i) x86::Pause();  // update in progress
  uint8_t sec = Cmos(0x00), min = Cmos(0x02), hour = Cmos(0x04), day = Cmos(0x07), mon = Cmos(0x08), year = Cmos(0x09),
          status_b = Cmos(0x0B);
  auto bcd = [&](uint8_t v) -> unsigned { return (status_b & 4) ? v : (v & 0x0F) + (v >> 4) * 10; };
  bool pm = hour & 0x80;
  unsigned h = bcd(hour & 0x7F);
  if (!(status_b & 2) && pm) h = (h % 12) + 12;
  unsigned y = 2000 + bcd(year);
  if (bcd(mon) < 1 || bcd(mon) > 12 || bcd(day) < 1 || bcd(day) > 31) {
    LOG_WARN("rtc: implausible date; wall clock starts at 1970");
    return;
  }
  int64_t days = DaysFromCivil(y, bcd(mon), bcd(day));
  uint64_t secs = uint64_t(days) * 86400 + h * 3600 + bcd(min) * 60 + bcd(sec);
  g_epoch_ns = secs * 1000000000ull - clock::NowNs();
}

uint64_t BootEpochNs() { return g_epoch_ns; }

namespace {
std::atomic<uint64_t> g_ticks{0};
uint8_t g_vector = 0;

bool OnInterrupt(interrupts::Frame*) {
  Cmos(0x0C);  // reading register C acknowledges the RTC
  g_ticks.fetch_add(1, std::memory_order_relaxed);
  return true;
}
}  // namespace

Result<void> StartPeriodicInterrupt(int rate) {
  if (rate < 3 || rate > 15) return Error::kInvalidArgument;
  if (g_vector == 0) {
    FOX_TRY_ASSIGN(g_vector, interrupts::AllocateVector(OnInterrupt));
  }
  bool enabled = irq::Save();
  x86::Outb(0x70, 0x8A);
  uint8_t a = x86::Inb(0x71);
  x86::Outb(0x70, 0x8A);
  x86::Outb(0x71, uint8_t((a & 0xF0) | rate));
  x86::Outb(0x70, 0x8B);
  uint8_t b = x86::Inb(0x71);
  x86::Outb(0x70, 0x8B);
  x86::Outb(0x71, b | 0x40);  // periodic interrupt enable
  Cmos(0x0C);
  irq::Restore(enabled);
  return ioapic::RouteIsa(8, g_vector, percpu::Of(0)->apic_id);
}

void StopPeriodicInterrupt() {
  bool enabled = irq::Save();
  x86::Outb(0x70, 0x8B);
  uint8_t b = x86::Inb(0x71);
  x86::Outb(0x70, 0x8B);
  x86::Outb(0x71, b & ~0x40);
  irq::Restore(enabled);
  (void)ioapic::Mask(8);
}

uint64_t Ticks() { return g_ticks.load(std::memory_order_relaxed); }

}  // namespace fox::rtc
