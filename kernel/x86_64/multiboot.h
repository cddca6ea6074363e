// Multiboot 1 and 2 boot information, parsed into one BootInfo.
//
// The parser never trusts the loader: every pointer and length is checked
// against a window of readable physical memory, strings are bounded, and a
// malformed structure yields kCorrupt with a message rather than a wild read.
// Pure logic with no privileged instructions, so it is unit-tested on the host.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fox/result.h"

namespace fox::boot {

constexpr uint32_t kMultiboot1Magic = 0x2BADB002;  // in EAX from a multiboot1 loader
constexpr uint32_t kMultiboot2Magic = 0x36D76289;  // in EAX from a multiboot2 loader

enum class MemoryType : uint32_t { kUsable = 1, kReserved = 2, kAcpiReclaimable = 3, kAcpiNvs = 4, kBad = 5 };

struct MemoryRegion {
  uint64_t base;
  uint64_t length;
  MemoryType type;
};

struct BootInfo {
  static constexpr size_t kMaxRegions = 128;
  static constexpr size_t kMaxCommandLine = 4096;

  int protocol = 0;                // 1 or 2
  bool cmdline_has_image = false;  // multiboot1 loaders prepend the image path
  char cmdline[kMaxCommandLine + 1] = {};
  char loader[64] = {};
  MemoryRegion regions[kMaxRegions] = {};
  size_t num_regions = 0;
  uint64_t rsdp = 0;           // physical address of a copy of the ACPI RSDP, or 0
  uint8_t rsdp_copy[36] = {};  // multiboot2 hands the RSDP over by value
  bool has_rsdp_copy = false;
  uint64_t info_start = 0, info_end = 0;  // the loader's structure, to keep clear of
};

// Readable physical memory [phys_base, phys_base + size), seen at `host`.
struct PhysWindow {
  const uint8_t* host;
  uint64_t phys_base;
  uint64_t size;
  bool Contains(uint64_t phys, uint64_t n) const {
    return phys >= phys_base && n <= size && phys - phys_base <= size - n;
  }
  // In integers: on a node `host` is address 0 (identity-mapped low memory),
  // and arithmetic on a null pointer is undefined (link-time optimisation,
  // which sees the 0, dropped every read through it).
  const uint8_t* At(uint64_t phys) const {
    return reinterpret_cast<const uint8_t*>(reinterpret_cast<uintptr_t>(host) + (phys - phys_base));
  }
};

// Fills `out` from the loader's magic and info pointer. `error` receives a
// human-readable reason on failure (kCorrupt or kUnsupported for an unknown
// magic). Never reads outside `mem`.
Result<void> ParseBootInfo(uint32_t magic, uint64_t info_phys, const PhysWindow& mem, BootInfo* out, char* error,
                           size_t error_size);

}  // namespace fox::boot
