// IPv4 addresses as plain values, for every platform (the transport's peer
// lists, lwIP's configuration on nodes, the frontend's plans). Pure
// functions; ToString allocates (not at interrupt level).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "fox/result.h"

namespace fox::net {

// An IPv4 address in host byte order: 10.0.2.15 is 0x0A00020F.
struct Ipv4 {
  uint32_t value = 0;

  static constexpr Ipv4 FromBytes(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
    return Ipv4{uint32_t(a) << 24 | uint32_t(b) << 16 | uint32_t(c) << 8 | d};
  }
  // "A.B.C.D", each part a decimal 0-255; kInvalidArgument otherwise.
  static Result<Ipv4> Parse(std::string_view text);
  // The netmask of a prefix length 0-32 (24 -> 255.255.255.0).
  static Ipv4 Netmask(int prefix_length);
  std::string ToString() const;
  bool IsAny() const { return value == 0; }
  friend bool operator==(Ipv4 a, Ipv4 b) { return a.value == b.value; }
  friend bool operator!=(Ipv4 a, Ipv4 b) { return a.value != b.value; }
};

// "A.B.C.D/NN" (NN 0-32) into address and prefix length.
Result<void> ParseCidr(std::string_view text, Ipv4* address, int* prefix_length);

}  // namespace fox::net
