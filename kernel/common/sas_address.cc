#include "fox/sas.h"

namespace fox::sas {

// FNV-1a: stable across builds and platforms, which is the point.
uintptr_t AddressFor(std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : name) {
    h ^= uint8_t(c);
    h *= 0x100000001b3ull;
  }
  return kBase + (h % kSlots) * kSlotSize;
}

}  // namespace fox::sas
