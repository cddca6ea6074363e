// 32-bit sequence numbers that wrap around (RFC 1982 serial-number arithmetic).
//
// a is "before" b when the distance from a forward to b is less than 2^31.
// Correct as long as no two numbers being compared are 2^31 or more apart,
// which the bounded windows of the reliable channel guarantee for every frame
// it accepts (see reliable.h). Safe in any context.
#pragma once

#include <cstdint>

namespace fox::net {

// Signed distance from b to a: positive when a is after b.
constexpr int32_t SeqDiff(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b); }
constexpr bool SeqLt(uint32_t a, uint32_t b) { return SeqDiff(a, b) < 0; }
constexpr bool SeqLe(uint32_t a, uint32_t b) { return SeqDiff(a, b) <= 0; }
constexpr bool SeqGt(uint32_t a, uint32_t b) { return SeqDiff(a, b) > 0; }
constexpr bool SeqGe(uint32_t a, uint32_t b) { return SeqDiff(a, b) >= 0; }

}  // namespace fox::net
