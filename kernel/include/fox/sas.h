// Single-address-space (SAS) segments (DESIGN.md "Cores, memory, events").
//
// A segment is a named, page-aligned region mapped at an address derived
// only from its name, so every node running the same image maps a segment
// of the same name at the same address and a GlobalAddress{node, ptr} needs
// no translation. Segments live in [kBase, kBase + kSlots * kSlotSize): the
// name's hash picks one of kSlots slots of kSlotSize bytes; two names that
// pick the same slot cannot both exist on a node (kAlreadyExists). Memory is
// zeroed and backed by large pages (1 GiB where possible, else 2 MiB).
// A write to a read-only segment faults and the panic names the segment.
// Linux programs (the hosted runtime, the frontend's place 0) map segments
// at the same addresses (mmap; a write to a read-only one is a SIGSEGV
// there), so symmetric addresses hold across native and hosted places.
// Not for interrupt context; Create/SetAccess/Destroy may block briefly
// while other cores flush their TLBs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fox/result.h"

namespace fox::sas {

constexpr uintptr_t kBase = uintptr_t(512) << 30;  // 512 GiB
constexpr size_t kSlotSize = size_t(4) << 30;      // 4 GiB: the largest segment
constexpr size_t kSlots = 512;                     // up to 2.5 TiB
constexpr size_t kGranule = size_t(2) << 20;       // sizes round up to 2 MiB

enum class Access : uint8_t { kReadOnly, kReadWrite };

struct Segment {
  uintptr_t base;
  size_t size;
  Access access;
};

// The address a segment named `name` has on every node. Pure function.
uintptr_t AddressFor(std::string_view name);

// Creates and maps the segment. Errors: kInvalidArgument (empty name, size
// 0), kOutOfRange (size > kSlotSize), kAlreadyExists (the name, or another
// name with the same slot, exists), kNoMemory.
Result<Segment> Create(std::string_view name, size_t size, Access access);
Result<Segment> Find(std::string_view name);
// Changes the protection, on every core before returning.
Result<void> SetAccess(std::string_view name, Access access);
// Unmaps the segment and returns its memory. The caller guarantees nobody
// uses it any more.
Result<void> Destroy(std::string_view name);

}  // namespace fox::sas
