// SHA-1 (FIPS 180-4), for UTS's tree (uts_tree.h), which defines a node's
// children by SHA-1 of its parent's digest. Header-only, for the app and its
// unit test. Not for security: SHA-1 is broken as a cryptographic hash.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace fox::apps::uts {

using Digest = std::array<uint8_t, 20>;

class Sha1 {
 public:
  void Update(const void* data, size_t length) {
    const auto* p = static_cast<const uint8_t*>(data);
    bytes_ += length;
    while (length > 0) {
      size_t n = std::min(length, sizeof block_ - used_);
      std::memcpy(block_ + used_, p, n);
      used_ += n;
      p += n;
      length -= n;
      if (used_ == sizeof block_) {
        Compress();
        used_ = 0;
      }
    }
  }
  Digest Final() {
    uint64_t bits = bytes_ * 8;
    uint8_t pad = 0x80;
    Update(&pad, 1);
    pad = 0;
    while (used_ != 56) Update(&pad, 1);
    uint8_t length[8];
    for (int i = 0; i < 8; ++i) length[i] = uint8_t(bits >> (56 - 8 * i));
    Update(length, 8);
    Digest out;
    for (int i = 0; i < 5; ++i) {
      for (int j = 0; j < 4; ++j) out[size_t(4 * i + j)] = uint8_t(h_[i] >> (24 - 8 * j));
    }
    return out;
  }

 private:
  static uint32_t Rotl(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }
  void Compress() {
    uint32_t w[80];
    for (int t = 0; t < 16; ++t) {
      w[t] = uint32_t(block_[4 * t]) << 24 | uint32_t(block_[4 * t + 1]) << 16 | uint32_t(block_[4 * t + 2]) << 8 |
             uint32_t(block_[4 * t + 3]);
    }
    for (int t = 16; t < 80; ++t) w[t] = Rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
    uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4];
    for (int t = 0; t < 80; ++t) {
      uint32_t f, k;
      if (t < 20) {
        f = (b & c) | (~b & d), k = 0x5A827999;
      } else if (t < 40) {
        f = b ^ c ^ d, k = 0x6ED9EBA1;
      } else if (t < 60) {
        f = (b & c) | (b & d) | (c & d), k = 0x8F1BBCDC;
      } else {
        f = b ^ c ^ d, k = 0xCA62C1D6;
      }
      uint32_t temp = Rotl(a, 5) + f + e + k + w[t];
      e = d, d = c, c = Rotl(b, 30), b = a, a = temp;
    }
    h_[0] += a, h_[1] += b, h_[2] += c, h_[3] += d, h_[4] += e;
  }

  uint32_t h_[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
  uint8_t block_[64];
  size_t used_ = 0;
  uint64_t bytes_ = 0;
};

inline Digest Sha1Of(const void* data, size_t length) {
  Sha1 s;
  s.Update(data, length);
  return s.Final();
}

}  // namespace fox::apps::uts
