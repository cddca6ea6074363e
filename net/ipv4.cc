// IPv4 addresses (ipv4.h).
#include "fox/net/ipv4.h"

#include "fox/format.h"

namespace fox::net {

Result<Ipv4> Ipv4::Parse(std::string_view text) {
  uint32_t value = 0;
  for (int part = 0; part < 4; ++part) {
    if (part > 0) {
      if (text.empty() || text.front() != '.') return Error::kInvalidArgument;
      text.remove_prefix(1);
    }
    size_t digits = 0;
    uint32_t n = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
      n = n * 10 + uint32_t(text[digits] - '0');
      if (++digits > 3) return Error::kInvalidArgument;
    }
    if (digits == 0 || n > 255) return Error::kInvalidArgument;
    text.remove_prefix(digits);
    value = value << 8 | n;
  }
  if (!text.empty()) return Error::kInvalidArgument;
  return Ipv4{value};
}

Ipv4 Ipv4::Netmask(int prefix_length) {
  if (prefix_length <= 0) return Ipv4{0};
  if (prefix_length >= 32) return Ipv4{0xFFFFFFFFu};
  return Ipv4{~((1u << (32 - prefix_length)) - 1)};
}

std::string Ipv4::ToString() const {
  char buf[16];
  Format(buf, sizeof buf, "%u.%u.%u.%u", value >> 24, (value >> 16) & 255, (value >> 8) & 255, value & 255);
  return buf;
}

Result<void> ParseCidr(std::string_view text, Ipv4* address, int* prefix_length) {
  size_t slash = text.find('/');
  if (slash == std::string_view::npos) return Error::kInvalidArgument;
  auto ip = Ipv4::Parse(text.substr(0, slash));
  if (!ip.ok()) return ip.error();
  std::string_view len = text.substr(slash + 1);
  if (len.empty() || len.size() > 2) return Error::kInvalidArgument;
  int n = 0;
  for (char c : len) {
    if (c < '0' || c > '9') return Error::kInvalidArgument;
    n = n * 10 + (c - '0');
  }
  if (n > 32) return Error::kOutOfRange;
  *address = *ip;
  *prefix_length = n;
  return Ok();
}

}  // namespace fox::net
