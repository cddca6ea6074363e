// IOAPICs: legacy (ISA) device interrupts routed to a kernel core. Every pin
// starts masked; Route unmasks one. Any core (one lock serialises the
// register accesses).
#pragma once

#include <cstdint>

#include "fox/result.h"

namespace fox::ioapic {

// Boot step: masks every pin of every IOAPIC the MADT lists.
void Init();

// Delivers ISA IRQ `irq` (after the MADT's source overrides) as `vector` to
// the core with APIC id `apic_id`. kNotFound if no IOAPIC serves it.
Result<void> RouteIsa(uint8_t irq, uint8_t vector, uint32_t apic_id);
// Delivers the interrupt line a PCI function's INTx pin is wired to, as
// the firmware wrote it in the function's Interrupt Line register (an ISA
// IRQ number after PCI interrupt routing, e.g. 10 or 11 on QEMU's pc and
// q35 machines), as `vector` on `apic_id`: level triggered; polarity from
// the MADT's source override for that IRQ, else active low (the PCI
// default). The line may be shared: every handler on it must ask its
// device whether it interrupted. The pin stays masked until Unmask; route
// it before the device can raise the line: an emulated IOAPIC (QEMU)
// notices a level only while the pin is set to level triggered, so a line
// raised under the boot-time (edge, masked) setting would never interrupt.
// kNotFound if no IOAPIC serves it.
Result<void> RoutePciLine(uint8_t line, uint8_t vector, uint32_t apic_id);
Result<void> Mask(uint8_t irq);
Result<void> Unmask(uint8_t irq);

}  // namespace fox::ioapic
