// COM1 16550 UART console at 115200 8N1, polled. Polling keeps it usable from
// panics and interrupt handlers; output is rare enough that a transmit
// interrupt would buy nothing.
#include "fox/console.h"

#include <atomic>
#include <cstring>

#include "cpu.h"
#include "fox/core.h"
#include "serial.h"
#include "tsc.h"

namespace fox {
namespace {
constexpr uint16_t kCom1 = 0x3F8;
bool g_present = false;
std::atomic<bool> g_lock{false};
// HoldFor: the core whose output goes first, and what the others wrote
// meanwhile (g_lock), written out by Release.
std::atomic<int> g_holder{-1};
char g_held[4096];
size_t g_held_bytes = 0;

void PutByte(char c) {
  // Bounded wait: a wedged UART must not hang a panic forever.
  for (int i = 0; i < 100000 && (x86::Inb(kCom1 + 5) & 0x20) == 0; ++i) x86::Pause();
  x86::Outb(kCom1, uint8_t(c));
}

void PutLocked(const char* data, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (data[i] == '\n') PutByte('\r');
    PutByte(data[i]);
  }
}

void Lock() {
  while (g_lock.exchange(true, std::memory_order_acquire)) x86::Pause();
}
void Unlock() { g_lock.store(false, std::memory_order_release); }

// Up to 1 s: a core that died holding the console must not silence the
// others for good.
void AwaitRelease() {
  uint64_t start = x86::Rdtsc(), limit = tsc::NsToTicks(1000000000);
  while (g_holder.load(std::memory_order_acquire) >= 0 && x86::Rdtsc() - start < limit) x86::Pause();
}
}  // namespace

namespace serial {

void Init() {
  x86::Outb(kCom1 + 1, 0x00);  // no interrupts
  x86::Outb(kCom1 + 3, 0x80);  // DLAB
  x86::Outb(kCom1 + 0, 0x01);  // divisor 1: 115200 baud
  x86::Outb(kCom1 + 1, 0x00);
  x86::Outb(kCom1 + 3, 0x03);  // 8N1
  x86::Outb(kCom1 + 2, 0xC7);  // FIFO on, cleared, 14-byte threshold
  x86::Outb(kCom1 + 4, 0x03);  // DTR, RTS
  // A UART that is absent reads back 0xFF from the line status register.
  g_present = x86::Inb(kCom1 + 5) != 0xFF;
}

void HoldFor(int core) {
  Flush();  // the hold held now (the banner's) ends first
  g_holder.store(core, std::memory_order_release);
}

void Release() {
  bool enabled = x86::SaveAndDisableInterrupts();
  Lock();
  if (g_present) PutLocked(g_held, g_held_bytes);
  g_held_bytes = 0;
  g_holder.store(-1, std::memory_order_release);
  Unlock();
  x86::RestoreInterrupts(enabled);
}

void Flush() {
  if (g_holder.load(std::memory_order_acquire) < 0) return;
  AwaitRelease();
  Release();
}

}  // namespace serial

void console::Write(const char* data, size_t n) {
  if (!g_present) return;
  bool enabled = x86::SaveAndDisableInterrupts();
  Lock();
  if (int holder = g_holder.load(std::memory_order_relaxed); holder >= 0 && holder != core::Current()) {
    if (n <= sizeof g_held - g_held_bytes) {  // kept for Release: the writer goes on
      std::memcpy(g_held + g_held_bytes, data, n);
      g_held_bytes += n;
      Unlock();
      x86::RestoreInterrupts(enabled);
      return;
    }
    Unlock();  // no room: after the holder
    AwaitRelease();
    Lock();
    PutLocked(g_held, g_held_bytes);  // what is left, if it did not come back
    g_held_bytes = 0;
  }
  PutLocked(data, n);
  Unlock();
  x86::RestoreInterrupts(enabled);
}

}  // namespace fox
