// IOAPICs: legacy (ISA) device interrupts routed to a kernel core. Every pin
// starts masked; Route unmasks one. Boot core, interrupts disabled.
#pragma once

#include <cstdint>

#include "fox/result.h"

namespace fox::ioapic {

// Boot step: masks every pin of every IOAPIC the MADT lists.
void Init();

// Delivers ISA IRQ `irq` (after the MADT's source overrides) as `vector` to
// the core with APIC id `apic_id`. kNotFound if no IOAPIC serves it.
Result<void> RouteIsa(uint8_t irq, uint8_t vector, uint32_t apic_id);
Result<void> Mask(uint8_t irq);

}  // namespace fox::ioapic
