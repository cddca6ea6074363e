// SAS segments in Linux programs (see fox/sas.h): the same names give the
// same addresses as on compute nodes, so a GlobalAddress{node, ptr} means
// the same thing at the frontend's place 0 as on a node. Each segment is an
// anonymous private mapping placed exactly at its address
// (MAP_FIXED_NOREPLACE: something else of the process already there is an
// error, never overwritten), with transparent huge pages asked for. A write
// to a read-only segment is a SIGSEGV here (nodes panic naming the segment).
// Sanitizer builds reserve this part of the address space for shadow
// memory: there Create fails with kUnsupported.
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>

#include "fox/log.h"
#include "fox/sas.h"

namespace fox::sas {
namespace {

struct Record {
  std::string name;
  size_t size = 0;
  Access access = Access::kReadWrite;
};

std::mutex g_lock;
Record* g_slots[kSlots];  // guarded by g_lock

size_t SlotOf(uintptr_t base) { return (base - kBase) / kSlotSize; }
int Protection(Access access) { return access == Access::kReadWrite ? PROT_READ | PROT_WRITE : PROT_READ; }

}  // namespace

Result<Segment> Create(std::string_view name, size_t size, Access access) {
  if (name.empty() || size == 0) return Error::kInvalidArgument;
  if (size > kSlotSize) return Error::kOutOfRange;
  size = (size + kGranule - 1) & ~(kGranule - 1);
  uintptr_t base = AddressFor(name);
  std::lock_guard<std::mutex> guard(g_lock);
  if (Record* other = g_slots[SlotOf(base)]; other != nullptr) {
    LOG_WARN("sas: cannot create '%.*s': %s", int(name.size()), name.data(),
             other->name == name ? "it exists" : "its slot is taken by another segment");
    return Error::kAlreadyExists;
  }
  void* want = reinterpret_cast<void*>(base);
  void* got =
      mmap(want, size, Protection(access), MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  if (got == MAP_FAILED || got != want) {
    int err = got == MAP_FAILED ? errno : EEXIST;
    if (got != MAP_FAILED) munmap(got, size);  // an old kernel took the address as a hint
    LOG_WARN("sas: cannot map '%.*s' at %#lx: %s", int(name.size()), name.data(), (unsigned long)base,
             err == EEXIST ? "the address range is in use in this process (a sanitizer's shadow memory?)"
                           : std::strerror(err));
    return err == ENOMEM ? Error::kNoMemory : Error::kUnsupported;
  }
  (void)madvise(got, size, MADV_HUGEPAGE);  // best effort, like the nodes' large pages
  g_slots[SlotOf(base)] = new Record{std::string(name), size, access};
  return Segment{base, size, access};
}

Result<Segment> Find(std::string_view name) {
  uintptr_t base = AddressFor(name);
  std::lock_guard<std::mutex> guard(g_lock);
  Record* r = g_slots[SlotOf(base)];
  if (r == nullptr || r->name != name) return Error::kNotFound;
  return Segment{base, r->size, r->access};
}

Result<void> SetAccess(std::string_view name, Access access) {
  uintptr_t base = AddressFor(name);
  std::lock_guard<std::mutex> guard(g_lock);
  Record* r = g_slots[SlotOf(base)];
  if (r == nullptr || r->name != name) return Error::kNotFound;
  if (mprotect(reinterpret_cast<void*>(base), r->size, Protection(access)) != 0) return Error::kUnsupported;
  r->access = access;
  return Ok();
}

Result<void> Destroy(std::string_view name) {
  uintptr_t base = AddressFor(name);
  std::lock_guard<std::mutex> guard(g_lock);
  Record* r = g_slots[SlotOf(base)];
  if (r == nullptr || r->name != name) return Error::kNotFound;
  munmap(reinterpret_cast<void*>(base), r->size);
  g_slots[SlotOf(base)] = nullptr;
  delete r;
  return Ok();
}

}  // namespace fox::sas
