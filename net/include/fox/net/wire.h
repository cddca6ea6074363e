// Little-endian loads and stores at any alignment, for wire formats.
//
// Frames sit wherever the NIC or the socket put them (a UDP payload inside an
// Ethernet buffer starts at offset 42), so nothing here assumes alignment.
// Safe in any context.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace fox::net::wire {

inline uint16_t ByteSwap(uint16_t v) { return __builtin_bswap16(v); }
inline uint32_t ByteSwap(uint32_t v) { return __builtin_bswap32(v); }
inline uint64_t ByteSwap(uint64_t v) { return __builtin_bswap64(v); }

template <typename T>
inline T LoadLe(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) v = ByteSwap(v);
  return v;
}

template <typename T>
inline void StoreLe(uint8_t* p, T v) {
  if constexpr (std::endian::native == std::endian::big) v = ByteSwap(v);
  std::memcpy(p, &v, sizeof v);
}

// Network byte order (IPv4, UDP and Ethernet headers).
template <typename T>
inline T LoadBe(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::little) v = ByteSwap(v);
  return v;
}

template <typename T>
inline void StoreBe(uint8_t* p, T v) {
  if constexpr (std::endian::native == std::endian::little) v = ByteSwap(v);
  std::memcpy(p, &v, sizeof v);
}

inline uint16_t Load16(const uint8_t* p) { return LoadLe<uint16_t>(p); }
inline uint32_t Load32(const uint8_t* p) { return LoadLe<uint32_t>(p); }
inline uint64_t Load64(const uint8_t* p) { return LoadLe<uint64_t>(p); }
inline void Store16(uint8_t* p, uint16_t v) { StoreLe(p, v); }
inline void Store32(uint8_t* p, uint32_t v) { StoreLe(p, v); }
inline void Store64(uint8_t* p, uint64_t v) { StoreLe(p, v); }

}  // namespace fox::net::wire
