#include "paging.h"

#include <atomic>
#include <cstring>

#include "cpu.h"
#include "fox/core.h"
#include "lapic.h"
#include "percpu.h"
#include "fox/log.h"
#include "fox/panic.h"
#include "fox/sas.h"
#include "fox/spinlock.h"

extern "C" uint64_t fox_pml4[512], fox_pt0[512];  // boot.S

namespace fox::paging {
namespace {

constexpr uint64_t kPresent = 1, kWritable = 2, kLarge = 0x80;
constexpr uint64_t kAddrMask = 0x000FFFFFFFFFF000ull;
constexpr uint64_t kGiB = 1ull << 30, k2MiB = 1ull << 21, k4KiB = 1ull << 12;

uint64_t* g_pml4 = nullptr;  // the shared PML4; each core runs on a copy (InitCore)
// Serialises changes to the tables. Lock order: this, then the page
// allocator (splits allocate table pages).
SpinLock g_tables_lock;
uint64_t* NewTable();
TableAllocator g_alloc = nullptr;
TableFree g_free = nullptr;
bool g_giant = false;

struct NamedRegion {
  uintptr_t start, end;
  const char* name;
};
constexpr int kMaxNamedRegions = 1024;
SpinLock g_regions_lock;
NamedRegion g_regions[kMaxNamedRegions] GUARDED_BY(g_regions_lock);
int g_num_regions GUARDED_BY(g_regions_lock) = 0;
bool g_regions_full_warned = false;

uint64_t* NewTable() {
  uintptr_t p = g_alloc ? g_alloc() : 0;
  return reinterpret_cast<uint64_t*>(p);
}

void FreeTable(uint64_t* table) {
  if (g_free != nullptr) g_free(reinterpret_cast<uintptr_t>(table));
}

uint64_t* Next(uint64_t entry) { return reinterpret_cast<uint64_t*>(entry & kAddrMask); }

// Replaces the large page in *entry by a table of 512 pages of the next size.
// This file's 512-entry loops are kept plain (the pragmas): each runs in
// microseconds, rarely, but unrolled and vectorised they were 130-140
// instructions apiece, translated when first run under an emulator (the
// boot runs Split's, for its guard pages).
Result<void> Split(uint64_t* entry, uint64_t page_size) {
  uint64_t* table = NewTable();
  if (table == nullptr) return Error::kNoMemory;
  uint64_t base = *entry & kAddrMask & ~(page_size - 1);
  uint64_t flags = *entry & ~kAddrMask & ~kLarge;
  uint64_t sub = page_size / 512;
#pragma clang loop unroll(disable) vectorize(disable)
  for (int i = 0; i < 512; ++i) table[i] = (base + i * sub) | flags | (sub == k4KiB ? 0 : kLarge);
  *entry = reinterpret_cast<uint64_t>(table) | kPresent | kWritable;
  return Ok();
}

}  // namespace

bool HasGiantPages() { return g_giant; }
void SetTableAllocator(TableAllocator alloc, TableFree free) {
  g_alloc = alloc;
  g_free = free;
}

Result<void> Init(uint64_t top, TableAllocator alloc) {
  g_alloc = alloc;
  g_giant = (x86::Cpuid(0x80000001).edx >> 26) & 1;
  top = (top + kGiB - 1) & ~(kGiB - 1);
  if (top < 4 * kGiB) top = 4 * kGiB;
  if (top > 512 * kGiB) top = 512 * kGiB;  // one PML4 entry; more RAM than this is not used
  // boot.S's tables, in the image: the first 4 GiB (2 MiB pages, the first
  // 2 MiB in 4 KiB pages) and every other shared top-level entry the kernel
  // will use (the address map in paging.h): the SAS range's, empty.
  constexpr uint64_t kSasFirst = sas::kBase >> 39, kSasLast = (sas::kBase + sas::kSlots * sas::kSlotSize - 1) >> 39;
  static_assert(kSasFirst == 1 && kSasLast == 4, "boot.S's fox_pml4 holds entries 1-4 for the SAS range");
  uint64_t* pml4 = fox_pml4;
  uint64_t* pdpt = Next(pml4[0]);
  for (uint64_t gib = 1; gib < top / kGiB; ++gib) {
    uint64_t base = gib * kGiB;
    if (g_giant) {
      pdpt[gib] = base | kPresent | kWritable | kLarge;
      continue;
    }
    if (gib < 4) continue;  // boot.S's
    uint64_t* pd = NewTable();
    if (pd == nullptr) return Error::kNoMemory;
#pragma clang loop unroll(disable) vectorize(disable)
    for (int i = 0; i < 512; ++i) pd[i] = (base + i * k2MiB) | kPresent | kWritable | kLarge;
    pdpt[gib] = reinterpret_cast<uint64_t>(pd) | kPresent | kWritable;
  }
  fox_pt0[0] = 0;  // page 0 absent: a null dereference faults
  g_pml4 = pml4;
  x86::WriteCr3(reinterpret_cast<uint64_t>(pml4));
  return Ok();
}

Result<void> UnmapPage(uintptr_t va) {
  if (g_pml4 == nullptr || (va >> 39) != 0) return Error::kInvalidArgument;
  SpinGuard guard(g_tables_lock);
  uint64_t* pdpte = &Next(g_pml4[0])[(va >> 30) & 511];
  if (!(*pdpte & kPresent)) return Ok();
  if (*pdpte & kLarge) FOX_TRY(Split(pdpte, kGiB));
  uint64_t* pde = &Next(*pdpte)[(va >> 21) & 511];
  if (!(*pde & kPresent)) return Ok();
  if (*pde & kLarge) FOX_TRY(Split(pde, k2MiB));
  Next(*pde)[(va >> 12) & 511] = 0;
  // Only this core's TLB is flushed: UnmapPage makes guard pages, and a
  // stale entry elsewhere only delays detection on a core that does not run
  // on that stack. Permission changes that must hold everywhere (SAS
  // segments) use a shootdown.
  x86::InvalidatePage(va);
  return Ok();
}

namespace {

// The entry that maps `va` at `level` (3 = PML4 index, 2 = PDPT, 1 = PD),
// creating tables on the way down if asked. nullptr if absent. Never creates
// a top-level entry: those are fixed at boot and copied into every core's
// PML4 (see the address map in paging.h).
uint64_t* Walk(uintptr_t va, int level, bool create) REQUIRES(g_tables_lock) {
  uint64_t* table = g_pml4;
  for (int l = 3; l > level; --l) {
    uint64_t* e = &table[(va >> (12 + 9 * l)) & 511];
    if (!(*e & kPresent)) {
      if (!create || l == 3) return nullptr;
      uint64_t* t = NewTable();
      if (t == nullptr) return nullptr;
      *e = reinterpret_cast<uint64_t>(t) | kPresent | kWritable;
    } else if (*e & kLarge) {
      return nullptr;  // inside a larger page
    }
    table = Next(*e);
  }
  return &table[(va >> (12 + 9 * level)) & 511];
}

template <typename F>
Result<void> ForEachLarge(uintptr_t va, size_t bytes, F f) REQUIRES(g_tables_lock) {
  for (uintptr_t p = va; p < va + bytes;) {
    uint64_t* e = Walk(p, 1, false);
    uint64_t* g = Walk(p, 2, false);
    if (g != nullptr && (*g & kPresent) && (*g & kLarge)) {
      f(g, kGiB);
      p += kGiB;
    } else if (e != nullptr && (*e & kPresent) && (*e & kLarge)) {
      f(e, k2MiB);
      p += k2MiB;
    } else {
      return Error::kNotFound;
    }
  }
  return Ok();
}

}  // namespace

Result<void> MapLarge(uintptr_t va, uintptr_t pa, size_t bytes, bool writable) {
  if (((va | pa | bytes) & (k2MiB - 1)) != 0 || bytes == 0 || ((va + bytes - 1) >> 47) != 0) {
    return Error::kInvalidArgument;
  }
  SpinGuard guard(g_tables_lock);
  for (uintptr_t slot = va >> 39; slot <= (va + bytes - 1) >> 39; ++slot) {
    if (!(g_pml4[slot] & kPresent)) return Error::kInvalidArgument;  // outside the address map
  }
  uint64_t flags = kPresent | kLarge | (writable ? kWritable : 0);
  for (size_t done = 0; done < bytes;) {
    uintptr_t v = va + done, p = pa + done;
    if (g_giant && ((v | p) & (kGiB - 1)) == 0 && bytes - done >= kGiB) {
      uint64_t* e = Walk(v, 2, true);
      if (e == nullptr) return Error::kNoMemory;
      if (*e & kPresent) return Error::kAlreadyExists;
      *e = p | flags;
      done += kGiB;
    } else {
      uint64_t* e = Walk(v, 1, true);
      if (e == nullptr) return Error::kNoMemory;
      if (*e & kPresent) return Error::kAlreadyExists;
      *e = p | flags;
      done += k2MiB;
    }
  }
  return Ok();
}

Result<void> ProtectLarge(uintptr_t va, size_t bytes, bool writable) {
  SpinGuard guard(g_tables_lock);
  FOX_TRY(ForEachLarge(va, bytes,
                       [writable](uint64_t* e, size_t) { *e = writable ? (*e | kWritable) : (*e & ~kWritable); }));
  x86::WriteCr3(x86::ReadCr3());
  return Ok();
}

Result<void> UnmapLarge(uintptr_t va, size_t bytes, void (*visit)(uintptr_t pa, size_t bytes)) {
  SpinGuard guard(g_tables_lock);
  FOX_TRY(ForEachLarge(va, bytes, [visit](uint64_t* e, size_t size) {
    uintptr_t pa = *e & kAddrMask & ~(size - 1);
    *e = 0;
    if (visit != nullptr) visit(pa, size);
  }));
  x86::WriteCr3(x86::ReadCr3());
  return Ok();
}

namespace {
SpinLock g_shootdown_lock;
std::atomic<uint64_t> g_shootdown_acks{0};
}  // namespace

void ShootdownTlb() {
  SpinGuard guard(g_shootdown_lock);
  x86::WriteCr3(x86::ReadCr3());
  uint64_t start = g_shootdown_acks.load(std::memory_order_acquire);
  uint64_t sent = 0;
  int self = core::Current();
  for (int c = 0; c < core::kMaxCores; ++c) {
    percpu::CoreLocal* local = percpu::Of(c);
    if (local == nullptr || c == self) continue;
    lapic::SendIpi(local->apic_id, lapic::kShootdownVector);
    ++sent;
  }
  while (g_shootdown_acks.load(std::memory_order_acquire) - start < sent) x86::Pause();
}

void AckShootdown() {
  x86::WriteCr3(x86::ReadCr3());
  g_shootdown_acks.fetch_add(1, std::memory_order_release);
}

namespace {
// The walk of the calling core's tables (CR3) for `va`; no lock.
bool Lookup(uintptr_t va, uintptr_t* pa) {
  uint64_t top = va >> 47;
  if (top != 0 && top != 0x1FFFF) return false;  // not canonical
  uint64_t e = reinterpret_cast<uint64_t*>(x86::ReadCr3() & kAddrMask)[(va >> 39) & 511];
  uint64_t size = 512 * kGiB;
  for (int l = 2; l >= 0; --l) {
    if (!(e & kPresent)) return false;
    e = Next(e)[(va >> (12 + 9 * l)) & 511];
    size >>= 9;
    if (l > 0 && (e & kPresent) && (e & kLarge)) break;
  }
  if (!(e & kPresent)) return false;
  *pa = (e & kAddrMask & ~(size - 1)) | (va & (size - 1));
  return true;
}
}  // namespace

bool IsMapped(uintptr_t va) {
  if (g_pml4 == nullptr) return va >= k4KiB && va < 4 * kGiB;  // the boot tables
  uintptr_t pa;
  return Lookup(va, &pa);
}

uintptr_t Translate(uintptr_t va) {
  uintptr_t pa;
  return Lookup(va, &pa) ? pa : 0;
}

uint64_t SharedRoot() { return reinterpret_cast<uint64_t>(g_pml4); }

namespace {
constexpr int kWindowPml4 = (kCoreWindow >> 39) & 511, kWindowPdpt = (kCoreWindow >> 30) & 511,
              kWindowPd = (kCoreWindow >> 21) & 511;
static_assert(kWindowPml4 == 511 && (kCoreWindow & (kCoreWindowBytes - 1)) == 0);

// The calling core's window page table, or nullptr before InitCore.
uint64_t* WindowTable() {
  uint64_t e = reinterpret_cast<uint64_t*>(x86::ReadCr3() & kAddrMask)[kWindowPml4];
  if (!(e & kPresent)) return nullptr;
  e = Next(e)[kWindowPdpt];
  if (!(e & kPresent)) return nullptr;
  e = Next(e)[kWindowPd];
  return (e & kPresent) ? Next(e) : nullptr;
}
}  // namespace

// What an unmapped part of a window shows: zeros, read-only.
alignas(4096) constinit const uint8_t g_zero_page[4096] = {};

namespace {
uint64_t ZeroPte() { return reinterpret_cast<uintptr_t>(g_zero_page) | kPresent; }
}  // namespace

Result<uint64_t> NewCoreRoot() {
  uint64_t* pml4 = NewTable();
  uint64_t* pdpt = NewTable();
  uint64_t* pd = NewTable();
  uint64_t* pt = NewTable();
  if (pml4 == nullptr || pdpt == nullptr || pd == nullptr || pt == nullptr) {
    for (uint64_t* t : {pml4, pdpt, pd, pt}) {
      if (t != nullptr) FreeTable(t);
    }
    return Error::kNoMemory;
  }
  {
    // The shared top-level entries do not change after Init; the lock only
    // documents that the copy reads the shared tables.
    SpinGuard guard(g_tables_lock);
    std::memcpy(pml4, g_pml4, 512 * sizeof *pml4);
  }
  if (pml4[kWindowPml4] & kPresent) Panic("paging: the per-core window's PML4 entry is in use");
#pragma clang loop unroll(disable) vectorize(disable)
  for (int i = 0; i < 512; ++i) pt[i] = ZeroPte();
  pd[kWindowPd] = reinterpret_cast<uint64_t>(pt) | kPresent | kWritable;
  pdpt[kWindowPdpt] = reinterpret_cast<uint64_t>(pd) | kPresent | kWritable;
  pml4[kWindowPml4] = reinterpret_cast<uint64_t>(pdpt) | kPresent | kWritable;
  return reinterpret_cast<uint64_t>(pml4);
}

void FreeCoreRoot(uint64_t root) {
  auto* pml4 = reinterpret_cast<uint64_t*>(root);
  uint64_t* pdpt = Next(pml4[kWindowPml4]);
  uint64_t* pd = Next(pdpt[kWindowPdpt]);
  for (uint64_t* t : {Next(pd[kWindowPd]), pd, pdpt, pml4}) FreeTable(t);
}

void LoadCoreRoot(uint64_t root) { x86::WriteCr3(root); }

Result<void> InitCore() {
  FOX_TRY_ASSIGN(uint64_t root, NewCoreRoot());
  LoadCoreRoot(root);
  return Ok();
}

void MapCoreWindow(uintptr_t pa, size_t bytes, bool writable) {
  uint64_t* pt = WindowTable();
  if (pt == nullptr) Panic("paging: core %d maps its window without its own page tables", core::Current());
  if (((pa | bytes) & (k4KiB - 1)) != 0 || bytes > kCoreWindowBytes || pa == 0) {
    Panic("paging: bad per-core window mapping %#lx + %#lx", (unsigned long)pa, (unsigned long)bytes);
  }
  uint64_t flags = kPresent | (writable ? kWritable : 0);
  for (size_t i = 0; i < kCoreWindowBytes / k4KiB; ++i)
    pt[i] = i * k4KiB < bytes ? (pa + i * k4KiB) | flags : ZeroPte();
  x86::WriteCr3(x86::ReadCr3());  // this core's TLB: no other core uses this table
}

uintptr_t CoreWindowTarget() {
  uint64_t* pt = WindowTable();
  if (pt == nullptr || !(pt[0] & kPresent) || pt[0] == ZeroPte()) return 0;
  return pt[0] & kAddrMask;
}

Result<void> MapPage(uintptr_t va) {
  if (g_pml4 == nullptr || (va >> 39) != 0) return Error::kInvalidArgument;
  SpinGuard guard(g_tables_lock);
  uint64_t pdpte = Next(g_pml4[0])[(va >> 30) & 511];
  if (!(pdpte & kPresent)) return Error::kNotFound;
  if (pdpte & kLarge) return Ok();
  uint64_t pde = Next(pdpte)[(va >> 21) & 511];
  if (!(pde & kPresent)) return Error::kNotFound;
  if (pde & kLarge) return Ok();
  // A present entry may be cached by any core; an absent one is not, so no
  // other core needs its TLB flushed.
  Next(pde)[(va >> 12) & 511] = (va & ~(k4KiB - 1)) | kPresent | kWritable;
  return Ok();
}

void NameRegion(uintptr_t start, uintptr_t end, const char* name) {
  SpinGuard guard(g_regions_lock);
  if (g_num_regions < kMaxNamedRegions) {
    g_regions[g_num_regions++] = {start, end, name};
  } else if (!g_regions_full_warned) {
    g_regions_full_warned = true;
    LOG_WARN("paging: more than %d named regions; faults in new ones are reported unnamed", kMaxNamedRegions);
  }
}

void UnnameRegion(uintptr_t start) {
  SpinGuard guard(g_regions_lock);
  for (int i = 0; i < g_num_regions; ++i) {
    if (g_regions[i].start == start) {
      g_regions[i] = g_regions[--g_num_regions];
      return;
    }
  }
}

// Called from the panic path: no lock (the lock holder may be the one that
// faulted); a concurrent change can at worst give a stale name.
const char* DescribeAddress(uintptr_t va) NO_THREAD_SAFETY_ANALYSIS {
  for (int i = 0; i < g_num_regions && i < kMaxNamedRegions; ++i) {
    if (va >= g_regions[i].start && va < g_regions[i].end) return g_regions[i].name;
  }
  return nullptr;
}

}  // namespace fox::paging
