// Ebb ids: the names of Elastic Building Blocks (DESIGN.md, EbbRT).
//
// An EbbId names one Ebb, and a distributed Ebb has the same id on every node
// of a job. The 32-bit space is split once, here:
//
//   0                                 kNullId: names nothing (a default EbbRef)
//   [kFirstStaticId, kFirstDynamicId) static ids: StaticId("fox.GlobalIdMap"),
//                                     the same number in every build and node
//   [kFirstDynamicId, kLastDynamicId] dynamic ids, handed out by an IdAllocator
//                                     (id_allocator.h) and never reused
//   0xFFFFFFFF                        reserved, never names an Ebb
//
// Everything here is constexpr and safe in any context.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "fox/net/ids.h"

namespace fox::ebb {

using fox::EbbId;  // fox/net/ids.h: the transport addresses messages by it

inline constexpr EbbId kNullId{0};
inline constexpr EbbId kFirstStaticId{1};
inline constexpr EbbId kFirstDynamicId{1u << 14};
inline constexpr uint32_t kStaticIdCount = Raw(kFirstDynamicId) - Raw(kFirstStaticId);
inline constexpr EbbId kLastDynamicId{0xFFFFFFFEu};
// Dynamic ids split in two: node-local ranges (the default allocator's
// LocalIdRangeSource) come from below kFirstGlobalDynamicId, job-wide ranges
// (the GlobalIdMap Ebb, served over the network) from it upwards, so an id
// handed out before a node switched to job-wide ranges never collides.
inline constexpr EbbId kFirstGlobalDynamicId{0x80000000u};

constexpr bool IsStaticId(EbbId id) { return id >= kFirstStaticId && id < kFirstDynamicId; }
constexpr bool IsDynamicId(EbbId id) { return id >= kFirstDynamicId && id <= kLastDynamicId; }

// 64-bit FNV-1a of `name`, finished with the splitmix64 mixer so that the
// reduction modulo kStaticIdCount uses every input bit. Part of the wire
// contract: changing it renumbers every static Ebb.
constexpr uint64_t NameHash(std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h;
}

// The well-known id of the static Ebb called `name` (by convention
// "subsystem.Name", e.g. "fox.GlobalIdMap"): deterministic across builds,
// nodes and platforms. Two names may collide; list the names a program uses in
// one StaticIdsDistinct static_assert (static_ids.h does it for fox's own).
constexpr EbbId StaticId(std::string_view name) {
  return EbbId{Raw(kFirstStaticId) + static_cast<uint32_t>(NameHash(name) % kStaticIdCount)};
}

// True when no two entries of `names` get the same StaticId (a name listed
// twice counts as a collision). Meant for static_assert.
constexpr bool StaticIdsDistinct(std::initializer_list<std::string_view> names) {
  for (auto a = names.begin(); a != names.end(); ++a) {
    for (auto b = a + 1; b != names.end(); ++b) {
      if (StaticId(*a) == StaticId(*b)) return false;
    }
  }
  return true;
}

}  // namespace fox::ebb
