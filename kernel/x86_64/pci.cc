#include "pci.h"

#include "cpu.h"
#include "fox/spinlock.h"
#include "interrupts.h"

namespace fox::pci {
namespace {

SpinLock g_lock;

uint32_t Address(const Device& d, uint8_t offset) {
  return (1u << 31) | (uint32_t(d.bus) << 16) | (uint32_t(d.slot) << 11) | (uint32_t(d.function) << 8) |
         (offset & 0xFC);
}

}  // namespace

uint32_t Read32(const Device& d, uint8_t offset) {
  SpinGuard guard(g_lock);
  x86::Outl(0xCF8, Address(d, offset));
  uint32_t v;
  asm volatile("inl %1, %0" : "=a"(v) : "Nd"(uint16_t(0xCFC)));
  return v;
}
uint16_t Read16(const Device& d, uint8_t offset) { return uint16_t(Read32(d, offset) >> ((offset & 2) * 8)); }
uint8_t Read8(const Device& d, uint8_t offset) { return uint8_t(Read32(d, offset) >> ((offset & 3) * 8)); }

void Write32(const Device& d, uint8_t offset, uint32_t value) {
  SpinGuard guard(g_lock);
  x86::Outl(0xCF8, Address(d, offset));
  x86::Outl(0xCFC, value);
}

void Write16(const Device& d, uint8_t offset, uint16_t value) {
  uint32_t old = Read32(d, offset & 0xFC);
  int shift = (offset & 2) * 8;
  Write32(d, offset & 0xFC, (old & ~(0xFFFFu << shift)) | (uint32_t(value) << shift));
}

namespace {

// One bus, then (depth first) the buses behind its PCI-to-PCI bridges, by
// the secondary bus numbers the firmware gave them. Each bus at most once,
// whatever the bridges claim.
void ScanBus(uint8_t bus, Function<void(const Device&)>& fn, uint64_t (&seen)[4]) {
  if (seen[bus / 64] & (1ull << (bus % 64))) return;
  seen[bus / 64] |= 1ull << (bus % 64);
  for (int slot = 0; slot < 32; ++slot) {
    for (int f = 0; f < 8; ++f) {
      Device d{bus, uint8_t(slot), uint8_t(f), 0, 0, 0, 0, 0, 0};
      uint32_t id = Read32(d, 0);
      if ((id & 0xFFFF) == 0xFFFF) {
        if (f == 0) break;  // no device in this slot
        continue;
      }
      d.vendor = uint16_t(id);
      d.device = uint16_t(id >> 16);
      uint32_t cls = Read32(d, 8);
      d.class_code = uint8_t(cls >> 24);
      d.subclass = uint8_t(cls >> 16);
      d.prog_if = uint8_t(cls >> 8);
      d.header_type = Read8(d, 0x0E);
      fn(d);
      if (d.class_code == 0x06 && d.subclass == 0x04 && (d.header_type & 0x7F) == 1) {
        ScanBus(Read8(d, 0x19), fn, seen);  // a PCI-to-PCI bridge's secondary bus
      }
      if (f == 0 && !(d.header_type & 0x80)) break;  // single-function device
    }
  }
}

}  // namespace

// Only the buses that exist: bus 0 and what bridges lead to (a multi-function
// host bridge at 0:0 means one root bus per function), not all 256 buses by
// brute force, which costs 16384 port accesses (milliseconds under
// emulation).
void Enumerate(const Function<void(const Device&)>& visit) {
  auto& fn = const_cast<Function<void(const Device&)>&>(visit);
  uint64_t seen[4] = {};
  Device host{0, 0, 0, 0, 0, 0, 0, 0, 0};
  if (!(Read8(host, 0x0E) & 0x80)) {
    ScanBus(0, fn, seen);
    return;
  }
  for (uint8_t f = 0; f < 8; ++f) {
    Device d{0, 0, f, 0, 0, 0, 0, 0, 0};
    if ((Read32(d, 0) & 0xFFFF) != 0xFFFF) ScanBus(f, fn, seen);
  }
}

uint64_t MemoryBar(const Device& d, int index) {
  uint8_t off = uint8_t(0x10 + 4 * index);
  uint32_t lo = Read32(d, off);
  if (lo & 1) return 0;  // I/O space
  uint64_t addr = lo & ~0xFu;
  if (((lo >> 1) & 3) == 2) addr |= uint64_t(Read32(d, uint8_t(off + 4))) << 32;
  return addr;
}

uint16_t IoBar(const Device& d, int index) {
  uint32_t v = Read32(d, uint8_t(0x10 + 4 * index));
  if (!(v & 1)) return 0;  // memory space
  return uint16_t(v & ~0x3u);
}

void EnableMemoryAndDma(const Device& d) { Write16(d, 0x04, uint16_t(Read16(d, 0x04) | 0x6)); }
void EnableIo(const Device& d) { Write16(d, 0x04, uint16_t(Read16(d, 0x04) | 0x1)); }

uint8_t FindCapability(const Device& d, uint8_t id, uint8_t after) {
  if (!(Read16(d, 0x06) & 0x10)) return 0;  // no capability list
  uint8_t p = after ? Read8(d, uint8_t(after + 1)) : Read8(d, 0x34);
  for (int guard = 0; p != 0 && guard < 48; ++guard) {
    p &= 0xFC;
    if (Read8(d, p) == id) return p;
    p = Read8(d, uint8_t(p + 1));
  }
  return 0;
}

Result<MsiX> EnableMsiX(const Device& d) {
  uint8_t cap = FindCapability(d, 0x11);
  if (cap == 0) return Error::kUnsupported;
  uint16_t control = Read16(d, uint8_t(cap + 2));
  uint32_t table = Read32(d, uint8_t(cap + 4));
  uint64_t bar = MemoryBar(d, int(table & 7));
  if (bar == 0) return Error::kUnsupported;
  MsiX m;
  m.cap = cap;
  m.size = uint16_t((control & 0x7FF) + 1);
  m.table = reinterpret_cast<volatile uint32_t*>(bar + (table & ~7u));
  for (uint16_t i = 0; i < m.size; ++i) m.table[i * 4 + 3] = m.table[i * 4 + 3] | 1;  // mask every entry
  Write16(d, uint8_t(cap + 2), uint16_t((control | 0x8000) & ~0x4000));               // enable, unmask function
  return m;
}

void SetMsiXEntry(const MsiX& m, uint16_t entry, uint32_t apic_id, uint8_t vector) {
  auto msg = interrupts::ComposeMsi(apic_id, vector);
  volatile uint32_t* e = m.table + entry * 4;
  e[0] = uint32_t(msg.address);
  e[1] = uint32_t(msg.address >> 32);
  e[2] = msg.data;
  e[3] = 0;  // unmasked
}

}  // namespace fox::pci
