// SipHash-2-4 (Aumasson and Bernstein, 2012): a keyed 64-bit pseudorandom
// function over short inputs, used as the MAC of active-message frames with
// the job key (am_frame.h).
//
// Pure computation: safe in any context, including interrupt handlers; no
// allocation, no locks.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fox::net {

// A 128-bit key. k0 holds key bytes 0..7 and k1 bytes 8..15, each read as a
// little-endian integer, as in the reference implementation.
struct SipKey {
  uint64_t k0 = 0;
  uint64_t k1 = 0;

  static SipKey FromBytes(const uint8_t bytes[16]);
  bool operator==(const SipKey&) const = default;
};

// Incremental SipHash-2-4: Update() any number of times, then Final() once.
// Hashing pieces gives the same result as hashing their concatenation.
class SipHasher {
 public:
  explicit SipHasher(const SipKey& key);

  void Update(const void* data, size_t len);
  // The 64-bit tag of everything given to Update(). Call at most once.
  uint64_t Final();

 private:
  void Compress(uint64_t m);

  uint64_t v0_, v1_, v2_, v3_;
  uint64_t tail_ = 0;  // pending bytes, little-endian, fewer than 8
  size_t tail_len_ = 0;
  uint64_t total_ = 0;  // bytes given so far (only the low 8 bits matter)
};

// One-shot SipHash-2-4 of `len` bytes at `data`.
uint64_t SipHash24(const SipKey& key, const void* data, size_t len);

}  // namespace fox::net
