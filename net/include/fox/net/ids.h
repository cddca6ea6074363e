// The three numbers a message is addressed by. EbbId and HandlerId are types
// of their own, so Send(node, ebb, handler, ...) does not compile with any two
// of them swapped (tests/unit/ids_test.cc); NodeId is still a plain integer.
//
//   NodeId     a node of a job, everywhere (transport, Messenger, Ebbs, APGAS
//              places): a number the frontend hands out and never reuses.
//   EbbId      an Elastic Building Block (ebb/ebb_id.h splits its space); the
//              same on every node of a job. 0 names nothing.
//   HandlerId  which of an Ebb's messages: numbered by each Ebb (or receiver)
//              for itself, usually as an unscoped enumeration of its own
//              (enum Handler : uint16_t { kGet = 1, kPut }), whose values
//              convert to a HandlerId; a plain integer does not.
//
// EbbId is a scoped enumeration: compared and hashed as it is, made from a
// number by EbbId{n} (no narrowing). Raw(id) reads either as its number where
// the number itself is wanted (a frame, a log line, a table index, a switch
// over an Ebb's handler enumeration).
#pragma once

#include <compare>
#include <cstdint>
#include <type_traits>

namespace fox {

using NodeId = uint32_t;

enum class EbbId : uint32_t {};
constexpr uint32_t Raw(EbbId id) { return static_cast<uint32_t>(id); }
// Ids come in ranges (an allocator's, the GlobalIdMap's): an id and an offset
// make an id, two ids a distance. Nothing else mixes with a number.
constexpr EbbId operator+(EbbId id, uint32_t offset) { return EbbId{Raw(id) + offset}; }
constexpr EbbId operator-(EbbId id, uint32_t offset) { return EbbId{Raw(id) - offset}; }
constexpr uint32_t operator-(EbbId a, EbbId b) { return Raw(a) - Raw(b); }

class HandlerId {
 public:
  constexpr HandlerId() = default;
  constexpr explicit HandlerId(uint16_t value) : value_(value) {}
  // An unscoped enumeration's value (an Ebb's list of its handlers) converts;
  // scoped enumerations (EbbId among them) and integers do not.
  template <class E>
  requires(std::is_enum_v<E>&& std::is_convertible_v<E, int>) constexpr HandlerId(E handler)
      : value_(static_cast<uint16_t>(handler)) {}  // NOLINT: implicit on purpose

  friend constexpr bool operator==(HandlerId, HandlerId) = default;
  friend constexpr auto operator<=>(HandlerId, HandlerId) = default;
  constexpr uint16_t value() const { return value_; }

 private:
  uint16_t value_ = 0;
};
constexpr uint16_t Raw(HandlerId id) { return id.value(); }

}  // namespace fox
