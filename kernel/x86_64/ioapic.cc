#include "ioapic.h"

#include "acpi.h"
#include "fox/irq_spinlock.h"
#include "fox/log.h"

namespace fox::ioapic {
namespace {

// Each access is an index write then a data access: two cores routing at
// once (a NIC set up when the network starts, the RTC's test interrupt)
// would interleave them. An interrupt handler may mask or unmask a pin.
IrqSpinLock g_lock;

uint32_t Read(uint32_t base, uint32_t reg) REQUIRES(g_lock) {
  *reinterpret_cast<volatile uint32_t*>(uintptr_t(base)) = reg;
  return *reinterpret_cast<volatile uint32_t*>(uintptr_t(base) + 0x10);
}
void Write(uint32_t base, uint32_t reg, uint32_t v) REQUIRES(g_lock) {
  *reinterpret_cast<volatile uint32_t*>(uintptr_t(base)) = reg;
  *reinterpret_cast<volatile uint32_t*>(uintptr_t(base) + 0x10) = v;
}
uint32_t Pins(uint32_t base) REQUIRES(g_lock) { return ((Read(base, 1) >> 16) & 0xFF) + 1; }

struct Pin {
  uint32_t base, index;
  uint16_t flags;
};

Result<Pin> Find(uint8_t irq) REQUIRES(g_lock) {
  const auto& t = acpi::Topology();
  uint32_t gsi = irq;
  uint16_t flags = 0;
  for (int i = 0; i < t.num_overrides; ++i) {
    if (t.overrides[i].irq == irq) {
      gsi = t.overrides[i].gsi;
      flags = t.overrides[i].flags;
    }
  }
  for (int i = 0; i < t.num_ioapics; ++i) {
    const auto& io = t.ioapics[i];
    if (gsi >= io.gsi_base && gsi < io.gsi_base + Pins(io.address)) return Pin{io.address, gsi - io.gsi_base, flags};
  }
  return Error::kNotFound;
}

// Finds the pin that serves `irq` and points it at `vector` on `apic_id`,
// under one hold of the lock. An ISA IRQ takes the MADT's polarity and
// trigger mode (flags bits 0-1 and 2-3, 3 = low / level); a PCI line is
// level triggered, active low unless the MADT says high, and left masked.
Result<void> Route(uint8_t irq, uint8_t vector, uint32_t apic_id, bool pci_line) {
  bool active_low, level;
  {
    IrqSpinGuard guard(g_lock);
    FOX_TRY_ASSIGN(Pin pin, Find(irq));
    uint16_t polarity = pin.flags & 3, trigger = (pin.flags >> 2) & 3;
    active_low = pci_line ? polarity != 1 : polarity == 3;  // PCI: 0 = bus default, active low
    level = pci_line || trigger == 3;
    uint32_t low = vector | (pci_line ? 1u << 16 : 0) | (active_low ? 1u << 13 : 0) | (level ? 1u << 15 : 0);
    Write(pin.base, 0x11 + 2 * pin.index, apic_id << 24);
    Write(pin.base, 0x10 + 2 * pin.index, low);
  }
  LOG_DEBUG("ioapic: IRQ %u -> vector %#x on APIC %u (%s, %s)", irq, vector, apic_id, level ? "level" : "edge",
            active_low ? "active low" : "active high");
  return Ok();
}

}  // namespace

void Init() {
  const auto& t = acpi::Topology();
  IrqSpinGuard guard(g_lock);
  for (int i = 0; i < t.num_ioapics; ++i) {
    uint32_t base = t.ioapics[i].address;
    for (uint32_t pin = 0; pin < Pins(base); ++pin) Write(base, 0x10 + 2 * pin, 1u << 16);
  }
}

Result<void> RouteIsa(uint8_t irq, uint8_t vector, uint32_t apic_id) { return Route(irq, vector, apic_id, false); }

Result<void> RoutePciLine(uint8_t line, uint8_t vector, uint32_t apic_id) { return Route(line, vector, apic_id, true); }

Result<void> Unmask(uint8_t irq) {
  IrqSpinGuard guard(g_lock);
  FOX_TRY_ASSIGN(Pin pin, Find(irq));
  Write(pin.base, 0x10 + 2 * pin.index, Read(pin.base, 0x10 + 2 * pin.index) & ~(1u << 16));
  return Ok();
}

Result<void> Mask(uint8_t irq) {
  IrqSpinGuard guard(g_lock);
  FOX_TRY_ASSIGN(Pin pin, Find(irq));
  Write(pin.base, 0x10 + 2 * pin.index, 1u << 16);
  return Ok();
}

}  // namespace fox::ioapic
