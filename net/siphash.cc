// SipHash-2-4, following the reference implementation (github.com/veorq/SipHash):
// 2 compression rounds per 8-byte word, 4 finalization rounds, 64-bit output.
#include "fox/net/siphash.h"

#include <cstring>

#include "fox/net/wire.h"

namespace fox::net {
namespace {

inline uint64_t Rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

inline void SipRound(uint64_t& v0, uint64_t& v1, uint64_t& v2, uint64_t& v3) {
  v0 += v1;
  v1 = Rotl(v1, 13);
  v1 ^= v0;
  v0 = Rotl(v0, 32);
  v2 += v3;
  v3 = Rotl(v3, 16);
  v3 ^= v2;
  v0 += v3;
  v3 = Rotl(v3, 21);
  v3 ^= v0;
  v2 += v1;
  v1 = Rotl(v1, 17);
  v1 ^= v2;
  v2 = Rotl(v2, 32);
}

}  // namespace

SipKey SipKey::FromBytes(const uint8_t bytes[16]) { return SipKey{wire::Load64(bytes), wire::Load64(bytes + 8)}; }

SipHasher::SipHasher(const SipKey& key)
    : v0_(0x736f6d6570736575ULL ^ key.k0),
      v1_(0x646f72616e646f6dULL ^ key.k1),
      v2_(0x6c7967656e657261ULL ^ key.k0),
      v3_(0x7465646279746573ULL ^ key.k1) {}

void SipHasher::Compress(uint64_t m) {
  v3_ ^= m;
  SipRound(v0_, v1_, v2_, v3_);
  SipRound(v0_, v1_, v2_, v3_);
  v0_ ^= m;
}

void SipHasher::Update(const void* data, size_t len) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  total_ += len;
  // Top up a partial word first.
  while (tail_len_ != 0 && len != 0) {
    tail_ |= uint64_t(*p++) << (8 * tail_len_);
    --len;
    if (++tail_len_ == 8) {
      Compress(tail_);
      tail_ = 0;
      tail_len_ = 0;
    }
  }
  if (len == 0) return;  // everything went into the partial word
  for (; len >= 8; p += 8, len -= 8) Compress(wire::Load64(p));
  for (size_t i = 0; i < len; ++i) tail_ |= uint64_t(p[i]) << (8 * i);
  tail_len_ = len;
}

uint64_t SipHasher::Final() {
  Compress(tail_ | (total_ << 56));
  v2_ ^= 0xff;
  for (int i = 0; i < 4; ++i) SipRound(v0_, v1_, v2_, v3_);
  return v0_ ^ v1_ ^ v2_ ^ v3_;
}

uint64_t SipHash24(const SipKey& key, const void* data, size_t len) {
  SipHasher h(key);
  h.Update(data, len);
  return h.Final();
}

}  // namespace fox::net
