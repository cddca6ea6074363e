#include "paging.h"

#include "cpu.h"

namespace fox::paging {
namespace {

constexpr uint64_t kPresent = 1, kWritable = 2, kLarge = 0x80;
constexpr uint64_t kAddrMask = 0x000FFFFFFFFFF000ull;
constexpr uint64_t kGiB = 1ull << 30, k2MiB = 1ull << 21, k4KiB = 1ull << 12;

uint64_t* g_pml4 = nullptr;
TableAllocator g_alloc = nullptr;
bool g_giant = false;

struct NamedRegion {
  uintptr_t start, end;
  const char* name;
};
NamedRegion g_regions[32];
int g_num_regions = 0;

uint64_t* NewTable() {
  uintptr_t p = g_alloc ? g_alloc() : 0;
  return reinterpret_cast<uint64_t*>(p);
}

uint64_t* Next(uint64_t entry) { return reinterpret_cast<uint64_t*>(entry & kAddrMask); }

// Replaces the large page in *entry by a table of 512 pages of the next size.
Result<void> Split(uint64_t* entry, uint64_t page_size) {
  uint64_t* table = NewTable();
  if (table == nullptr) return Error::kNoMemory;
  uint64_t base = *entry & kAddrMask & ~(page_size - 1);
  uint64_t flags = *entry & ~kAddrMask & ~kLarge;
  uint64_t sub = page_size / 512;
  for (int i = 0; i < 512; ++i) table[i] = (base + i * sub) | flags | (sub == k4KiB ? 0 : kLarge);
  *entry = reinterpret_cast<uint64_t>(table) | kPresent | kWritable;
  return Ok();
}

}  // namespace

bool HasGiantPages() { return g_giant; }
void SetTableAllocator(TableAllocator alloc) { g_alloc = alloc; }

Result<void> Init(uint64_t top, TableAllocator alloc) {
  g_alloc = alloc;
  g_giant = (x86::Cpuid(0x80000001).edx >> 26) & 1;
  top = (top + kGiB - 1) & ~(kGiB - 1);
  if (top < 4 * kGiB) top = 4 * kGiB;
  if (top > 512 * kGiB) top = 512 * kGiB;  // one PML4 entry; more RAM than this is not used
  uint64_t* pml4 = NewTable();
  uint64_t* pdpt = NewTable();
  if (pml4 == nullptr || pdpt == nullptr) return Error::kNoMemory;
  pml4[0] = reinterpret_cast<uint64_t>(pdpt) | kPresent | kWritable;
  for (uint64_t gib = 0; gib < top / kGiB; ++gib) {
    uint64_t base = gib * kGiB;
    if (g_giant && gib != 0) {
      pdpt[gib] = base | kPresent | kWritable | kLarge;
      continue;
    }
    uint64_t* pd = NewTable();
    if (pd == nullptr) return Error::kNoMemory;
    for (int i = 0; i < 512; ++i) pd[i] = (base + i * k2MiB) | kPresent | kWritable | kLarge;
    pdpt[gib] = reinterpret_cast<uint64_t>(pd) | kPresent | kWritable;
  }
  // The first 2 MiB in 4 KiB pages, page 0 absent.
  uint64_t* pd0 = Next(pdpt[0]);
  FOX_TRY(Split(&pd0[0], k2MiB));
  Next(pd0[0])[0] = 0;
  g_pml4 = pml4;
  x86::WriteCr3(reinterpret_cast<uint64_t>(pml4));
  return Ok();
}

Result<void> UnmapPage(uintptr_t va) {
  if (g_pml4 == nullptr || (va >> 39) != 0) return Error::kInvalidArgument;
  uint64_t* pdpte = &Next(g_pml4[0])[(va >> 30) & 511];
  if (!(*pdpte & kPresent)) return Ok();
  if (*pdpte & kLarge) FOX_TRY(Split(pdpte, kGiB));
  uint64_t* pde = &Next(*pdpte)[(va >> 21) & 511];
  if (!(*pde & kPresent)) return Ok();
  if (*pde & kLarge) FOX_TRY(Split(pde, k2MiB));
  Next(*pde)[(va >> 12) & 511] = 0;
  x86::InvalidatePage(va);
  return Ok();
}

bool IsMapped(uintptr_t va) {
  if (g_pml4 == nullptr) return va >= k4KiB && va < 4 * kGiB;  // the boot tables
  if ((va >> 39) != 0 || !(g_pml4[0] & kPresent)) return false;
  uint64_t e = Next(g_pml4[0])[(va >> 30) & 511];
  if (!(e & kPresent)) return false;
  if (e & kLarge) return true;
  e = Next(e)[(va >> 21) & 511];
  if (!(e & kPresent)) return false;
  if (e & kLarge) return true;
  return Next(e)[(va >> 12) & 511] & kPresent;
}

void NameRegion(uintptr_t start, uintptr_t end, const char* name) {
  if (g_num_regions < int(sizeof g_regions / sizeof g_regions[0])) g_regions[g_num_regions++] = {start, end, name};
}

const char* DescribeAddress(uintptr_t va) {
  for (int i = 0; i < g_num_regions; ++i) {
    if (va >= g_regions[i].start && va < g_regions[i].end) return g_regions[i].name;
  }
  return nullptr;
}

}  // namespace fox::paging
