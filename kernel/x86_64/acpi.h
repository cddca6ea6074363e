// ACPI tables (native): found from the RSDP (handed over by multiboot2 or
// found by scanning the BIOS areas), checksummed before use. Read-only.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fox::acpi {

struct __attribute__((packed)) SdtHeader {
  char signature[4];
  uint32_t length;
  uint8_t revision, checksum;
  char oem_id[6], oem_table_id[8];
  uint32_t oem_revision, creator_id, creator_revision;
};

// Boot step. `rsdp_copy` is the loader's copy of the RSDP, or nullptr.
void Init(const uint8_t* rsdp_copy);

// The table with this signature ("APIC", "FACP", ...), checksum verified, or
// nullptr. `index` picks among tables sharing a signature.
const SdtHeader* FindTable(const char signature[4], int index = 0);

// What the MADT says about interrupt hardware. Without a MADT: one
// processor (the boot core), the standard xAPIC address, no IOAPIC.
struct InterruptTopology {
  static constexpr int kMaxCpus = 256, kMaxIoApics = 8, kMaxOverrides = 16;
  uint64_t lapic_address = 0xFEE00000;
  struct Cpu {
    uint32_t apic_id;
    bool enabled;  // enabled now (else only online-capable)
  } cpus[kMaxCpus];
  int num_cpus = 0;
  struct IoApic {
    uint32_t id, address, gsi_base;
  } ioapics[kMaxIoApics];
  int num_ioapics = 0;
  struct Override {  // ISA IRQ -> global system interrupt
    uint8_t irq;
    uint32_t gsi;
    uint16_t flags;  // MPS INTI flags: polarity (bits 0-1), trigger (bits 2-3)
  } overrides[kMaxOverrides];
  int num_overrides = 0;
};
const InterruptTopology& Topology();

// Processors the MADT lists as enabled (or online-capable); 1 if no MADT.
int CountProcessors();

// Powers off through the FADT's PM1 control registers and the _S5 sleep type
// from the DSDT. Returns only if that is impossible.
void PowerOff();

}  // namespace fox::acpi
