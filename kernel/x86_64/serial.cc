// COM1 16550 UART console at 115200 8N1, polled. Polling keeps it usable from
// panics and interrupt handlers; output is rare enough that a transmit
// interrupt would buy nothing.
#include "fox/console.h"

#include <atomic>

#include "cpu.h"
#include "serial.h"

namespace fox {
namespace {
constexpr uint16_t kCom1 = 0x3F8;
bool g_present = false;
std::atomic<bool> g_lock{false};
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

}  // namespace serial

namespace {
void PutByte(char c) {
  // Bounded wait: a wedged UART must not hang a panic forever.
  for (int i = 0; i < 100000 && (x86::Inb(kCom1 + 5) & 0x20) == 0; ++i) x86::Pause();
  x86::Outb(kCom1, uint8_t(c));
}
}  // namespace

void console::Write(const char* data, size_t n) {
  if (!g_present) return;
  bool enabled = x86::SaveAndDisableInterrupts();
  while (g_lock.exchange(true, std::memory_order_acquire)) x86::Pause();
  for (size_t i = 0; i < n; ++i) {
    if (data[i] == '\n') PutByte('\r');
    PutByte(data[i]);
  }
  g_lock.store(false, std::memory_order_release);
  x86::RestoreInterrupts(enabled);
}

}  // namespace fox
