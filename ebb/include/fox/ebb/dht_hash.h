// The Dht's key hash: xxHash64 (Yann Collet, 2012; the XXH64 of the
// reference xxhash.h), implemented here. Stable across nodes, platforms and
// releases: a key's hash decides which nodes hold it (dht_ring.h), so it is
// part of the wire contract and must never change.
//
// Pure computation: safe in any context, including interrupt handlers; no
// allocation, no locks.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fox::ebb {

// XXH64 of `length` bytes at `data` with `seed` (0 for keys).
uint64_t XxHash64(const void* data, size_t length, uint64_t seed = 0);

// The hash that places a key on the ring.
inline uint64_t DhtKeyHash(const void* key, size_t length) { return XxHash64(key, length, 0); }

}  // namespace fox::ebb
