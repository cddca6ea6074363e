#include "symbols.h"

extern "C" const uint8_t __symtab_start[];
extern "C" const uint8_t __symtab_end[];

namespace fox::symbols {
namespace {

// Layout written by boot/gen_symtab.py (little endian):
//   Header, then `count` Entry sorted by address, then the string bytes.
struct Header {
  uint32_t magic;  // 'FXSY'
  uint32_t count;
};
struct Entry {
  uint64_t addr;
  uint32_t size;
  uint32_t name;  // offset from the start of the strings
};
constexpr uint32_t kMagic = 0x59535846;

const Header* Table() {
  if (size_t(__symtab_end - __symtab_start) < sizeof(Header)) return nullptr;
  auto* h = reinterpret_cast<const Header*>(__symtab_start);
  if (h->magic != kMagic) return nullptr;
  if (sizeof(Header) + uint64_t(h->count) * sizeof(Entry) > size_t(__symtab_end - __symtab_start)) return nullptr;
  return h;
}

}  // namespace

size_t Count() {
  const Header* h = Table();
  return h ? h->count : 0;
}

const char* Lookup(uint64_t addr, uint64_t* offset) {
  const Header* h = Table();
  if (h == nullptr || h->count == 0) return nullptr;
  auto* entries = reinterpret_cast<const Entry*>(h + 1);
  auto* strings = reinterpret_cast<const char*>(entries + h->count);
  size_t strings_size = size_t(__symtab_end - reinterpret_cast<const uint8_t*>(strings));
  size_t lo = 0, hi = h->count;  // find the last entry with addr <= target
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (entries[mid].addr <= addr)
      lo = mid;
    else
      hi = mid;
  }
  const Entry& e = entries[lo];
  if (addr < e.addr) return nullptr;
  uint64_t limit = e.size != 0 ? e.size : (lo + 1 < h->count ? entries[lo + 1].addr - e.addr : 0x1000);
  if (addr - e.addr >= limit || e.name >= strings_size) return nullptr;
  *offset = addr - e.addr;
  return strings + e.name;
}

}  // namespace fox::symbols
