// SAS segments on native nodes (see fox/sas.h). One record per slot; the
// page tables of the SAS range are shared by every core (one PML4), so a
// mapping made on one core is seen by all, and only permission changes and
// removals need a TLB shootdown.
#include "fox/sas.h"

#include <cstring>
#include <string>

#include "fox/format.h"
#include "fox/log.h"
#include "fox/spinlock.h"
#include "memory.h"
#include "paging.h"

namespace fox::sas {
namespace {

struct Record {
  std::string name;
  size_t size = 0;
  Access access = Access::kReadWrite;
  char description[96] = {};  // what a fault report calls it
};

SpinLock g_lock;
Record* g_slots[kSlots] GUARDED_BY(g_lock);

size_t SlotOf(uintptr_t base) { return (base - kBase) / kSlotSize; }

void Describe(Record* r, uintptr_t base) {
  Format(r->description, sizeof r->description, "SAS segment '%.48s' (%s)", r->name.c_str(),
         r->access == Access::kReadOnly ? "read-only" : "read-write");
  paging::UnnameRegion(base);
  paging::NameRegion(base, base + r->size, r->description);
}

void FreeBacking(uintptr_t pa, size_t bytes) {
  (void)bytes;
  (void)memory::Pages().Free(reinterpret_cast<void*>(pa));
}

// Backs [base, base+size) with zeroed blocks: 1 GiB where it fits, else 2 MiB.
Result<void> Back(uintptr_t base, size_t size, bool writable) {
  constexpr size_t kGiB = size_t(1) << 30;
  for (size_t done = 0; done < size;) {
    size_t chunk =
        (paging::HasGiantPages() && size - done >= kGiB && ((base + done) & (kGiB - 1)) == 0) ? kGiB : kGranule;
    void* block = memory::Pages().Alloc(mem::PageAllocator::OrderForBytes(chunk)).value_or(nullptr);
    if (block == nullptr && chunk == kGiB) {
      chunk = kGranule;
      block = memory::Pages().Alloc(mem::PageAllocator::OrderForBytes(chunk)).value_or(nullptr);
    }
    if (block == nullptr) {
      if (done > 0) (void)paging::UnmapLarge(base, done, FreeBacking);
      return Error::kNoMemory;
    }
    std::memset(block, 0, chunk);
    auto mapped = paging::MapLarge(base + done, reinterpret_cast<uintptr_t>(block), chunk, writable);
    if (!mapped.ok()) {
      (void)memory::Pages().Free(block);
      if (done > 0) (void)paging::UnmapLarge(base, done, FreeBacking);
      return mapped.error();
    }
    done += chunk;
  }
  return Ok();
}

}  // namespace

Result<Segment> Create(std::string_view name, size_t size, Access access) {
  if (name.empty() || size == 0) return Error::kInvalidArgument;
  if (size > kSlotSize) return Error::kOutOfRange;
  size = (size + kGranule - 1) & ~(kGranule - 1);
  uintptr_t base = AddressFor(name);
  auto* record = new Record;
  record->name = std::string(name);
  record->size = size;
  record->access = access;
  {
    SpinGuard guard(g_lock);
    if (g_slots[SlotOf(base)] != nullptr) {
      bool same = g_slots[SlotOf(base)]->name == name;
      LOG_WARN("sas: cannot create '%.*s': %s", int(name.size()), name.data(),
               same ? "it exists" : "its slot is taken by another segment");
      delete record;
      return Error::kAlreadyExists;
    }
    g_slots[SlotOf(base)] = record;  // reserve the slot while we map
  }
  auto backed = Back(base, size, access == Access::kReadWrite);
  if (!backed.ok()) {
    SpinGuard guard(g_lock);
    g_slots[SlotOf(base)] = nullptr;
    delete record;
    return backed.error();
  }
  Describe(record, base);
  LOG_DEBUG("sas: '%s' at %#lx, %zu bytes, %s", record->name.c_str(), (unsigned long)base, size,
            access == Access::kReadOnly ? "read-only" : "read-write");
  return Segment{base, size, access};
}

Result<Segment> Find(std::string_view name) {
  uintptr_t base = AddressFor(name);
  SpinGuard guard(g_lock);
  Record* r = g_slots[SlotOf(base)];
  if (r == nullptr || r->name != name) return Error::kNotFound;
  return Segment{base, r->size, r->access};
}

Result<void> SetAccess(std::string_view name, Access access) {
  uintptr_t base = AddressFor(name);
  Record* r;
  {
    SpinGuard guard(g_lock);
    r = g_slots[SlotOf(base)];
    if (r == nullptr || r->name != name) return Error::kNotFound;
    r->access = access;
  }
  FOX_TRY(paging::ProtectLarge(base, r->size, access == Access::kReadWrite));
  paging::ShootdownTlb();
  Describe(r, base);
  return Ok();
}

Result<void> Destroy(std::string_view name) {
  uintptr_t base = AddressFor(name);
  Record* r;
  {
    SpinGuard guard(g_lock);
    r = g_slots[SlotOf(base)];
    if (r == nullptr || r->name != name) return Error::kNotFound;
    g_slots[SlotOf(base)] = nullptr;
  }
  paging::UnnameRegion(base);
  FOX_TRY(paging::UnmapLarge(base, r->size, FreeBacking));
  paging::ShootdownTlb();
  delete r;
  return Ok();
}

}  // namespace fox::sas
