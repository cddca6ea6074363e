// PCI configuration space (mechanism #1, ports 0xCF8/0xCFC), device
// enumeration, BARs, capabilities and MSI-X (native). Boot core or events;
// not from interrupt context (config cycles are not atomic across cores:
// one lock serialises them).
#pragma once

#include <cstdint>

#include "fox/function.h"
#include "fox/result.h"

namespace fox::pci {

struct Device {
  uint8_t bus, slot, function;
  uint16_t vendor, device;
  uint8_t class_code, subclass, prog_if, header_type;
};

uint32_t Read32(const Device& d, uint8_t offset);
uint16_t Read16(const Device& d, uint8_t offset);
uint8_t Read8(const Device& d, uint8_t offset);
void Write32(const Device& d, uint8_t offset, uint32_t value);
void Write16(const Device& d, uint8_t offset, uint16_t value);

// Calls `visit` for every function present on every bus reachable from the
// host bridge (bus 0 and the buses behind PCI-to-PCI bridges).
void Enumerate(const Function<void(const Device&)>& visit);

// The address a memory BAR decodes (64-bit BARs included), or 0 for an I/O
// or absent BAR.
uint64_t MemoryBar(const Device& d, int index);
// The port an I/O BAR decodes, or 0 for a memory or absent BAR.
uint16_t IoBar(const Device& d, int index);
// Turns on memory decoding and bus mastering (DMA).
void EnableMemoryAndDma(const Device& d);
// Turns on I/O port decoding (for devices driven through an I/O BAR).
void EnableIo(const Device& d);

// Offset of the first capability with this id at or after `after` (0 =
// from the start), or 0 if none.
uint8_t FindCapability(const Device& d, uint8_t id, uint8_t after = 0);

// MSI-X: the device's vector table (in one of its BARs).
struct MsiX {
  volatile uint32_t* table = nullptr;
  uint16_t size = 0;
  uint8_t cap = 0;
};
Result<MsiX> EnableMsiX(const Device& d);
// Points table entry `entry` at `vector` on the core with APIC id `apic_id`.
void SetMsiXEntry(const MsiX& m, uint16_t entry, uint32_t apic_id, uint8_t vector);

}  // namespace fox::pci
