#include "memory.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "fox/core.h"
#include "fox/log.h"
#include "fox/panic.h"
#include "paging.h"

extern "C" char __image_start[], __image_end[];

namespace fox::memory {
namespace {

constexpr uint64_t kLowReserved = 1ull << 20;  // below 1 MiB: firmware, SMP trampoline
constexpr uint64_t kMaxPhys = 512ull << 30;    // what the page tables cover

mem::PageAllocator g_pages;
mem::Heap g_heap;
uint64_t g_usable = 0;

// Early bump allocator: page tables and allocator metadata, right after the
// image, before the page allocator exists.
uintptr_t g_bump = 0, g_bump_limit = 0;

// Contents are undefined: page tables zero themselves, metadata is written
// by PageAllocator::Init.
uintptr_t BumpPages(size_t bytes) {
  bytes = (bytes + mem::kPageSize - 1) & ~(mem::kPageSize - 1);
  if (g_bump + bytes > g_bump_limit) return 0;
  uintptr_t p = g_bump;
  g_bump += bytes;
  return p;
}
uintptr_t BumpTable() {
  uintptr_t p = BumpPages(mem::kPageSize);
  if (p != 0) std::memset(reinterpret_cast<void*>(p), 0, mem::kPageSize);
  return p;
}

uintptr_t PageTable() {
  auto p = g_pages.Alloc(0);
  if (!p.ok()) return 0;
  std::memset(*p, 0, mem::kPageSize);
  return reinterpret_cast<uintptr_t>(*p);
}

void FreePageTable(uintptr_t page) { (void)g_pages.Free(reinterpret_cast<void*>(page)); }

void OnOutOfMemory(size_t size, size_t align) {
  auto s = g_pages.GetStats();
  LOG_ERROR("heap: out of memory allocating %zu bytes (alignment %zu); %llu of %llu pages free", size, align,
            (unsigned long long)s.free_pages, (unsigned long long)s.total_pages);
}

void OnHeapError(const char* what, const void* p) { Panic("heap: %s %p", what, p); }

// The whole pages of a usable region that lie in [lo, hi), as [*b, *e);
// false if none.
bool UsablePages(const boot::MemoryRegion& r, uint64_t lo, uint64_t hi, uint64_t* b, uint64_t* e) {
  if (r.type != boot::MemoryType::kUsable) return false;
  *b = (std::max(r.base, lo) + mem::kPageSize - 1) & ~(mem::kPageSize - 1);
  *e = std::min(r.base + r.length, hi) & ~(mem::kPageSize - 1);
  return *b < *e;
}

}  // namespace

Result<void> Init(const boot::BootInfo& info, int max_cores) {
  uintptr_t image_start = reinterpret_cast<uintptr_t>(__image_start);
  uintptr_t image_end = reinterpret_cast<uintptr_t>(__image_end);
  // Span of usable RAM and the region holding the end of the image.
  uint64_t lo = UINT64_MAX, hi = 0;
  for (size_t i = 0; i < info.num_regions; ++i) {
    uint64_t b, e;
    if (!UsablePages(info.regions[i], kLowReserved, kMaxPhys, &b, &e)) continue;
    lo = b < lo ? b : lo;
    hi = e > hi ? e : hi;
    if (image_end >= b && image_end < e) {
      g_bump = image_end;
      g_bump_limit = e < (4ull << 30) ? e : (4ull << 30);  // the boot tables map 4 GiB
    }
  }
  if (g_bump == 0 || lo >= hi) {
    LOG_ERROR("mem: no usable RAM after the kernel image at %#lx", (unsigned long)image_end);
    return Error::kNoMemory;
  }
  uint64_t top = 0;
  for (size_t i = 0; i < info.num_regions; ++i) {
    uint64_t e = info.regions[i].base + info.regions[i].length;
    if (e > top) top = e;
  }
  FOX_TRY(paging::Init(top, BumpTable));
  size_t meta_bytes = mem::PageAllocator::MetaBytes(lo, hi - lo);
  uintptr_t meta = BumpPages(meta_bytes);
  if (meta == 0) return Error::kNoMemory;
  FOX_TRY(g_pages.Init(lo, hi - lo, reinterpret_cast<void*>(meta)));
  uintptr_t reserved_lo = image_start, reserved_hi = g_bump;
  for (size_t i = 0; i < info.num_regions; ++i) {
    uint64_t b, e;
    if (!UsablePages(info.regions[i], lo, hi, &b, &e)) continue;
    // The region minus [reserved_lo, reserved_hi).
    uint64_t pieces[2][2] = {{b, e < reserved_lo ? e : reserved_lo}, {b > reserved_hi ? b : reserved_hi, e}};
    for (auto& piece : pieces) {
      if (piece[0] < piece[1]) {
        FOX_TRY(g_pages.AddFree(piece[0], piece[1] - piece[0]));
        g_usable += piece[1] - piece[0];
      }
    }
  }
  paging::SetTableAllocator(PageTable, FreePageTable);
  // The boot core's own PML4 with its per-core window (paging.h); smp.cc
  // prepares the other cores' before starting them.
  FOX_TRY(paging::InitCore());
  FOX_TRY(g_heap.Init(&g_pages, core::Current, std::clamp(max_cores, 1, core::kMaxCores)));
  g_heap.SetOomHandler(OnOutOfMemory);
  g_heap.SetErrorHandler(OnHeapError);
  LOG_DEBUG("mem: usable %llu MiB in [%#llx, %#llx); kernel image %#lx-%#lx, early tables to %#lx",
            (unsigned long long)(g_usable >> 20), (unsigned long long)lo, (unsigned long long)hi,
            (unsigned long)image_start, (unsigned long)image_end, (unsigned long)g_bump);
  return Ok();
}

mem::PageAllocator& Pages() { return g_pages; }
mem::Heap& Heap() { return g_heap; }
uint64_t UsableBytes() { return g_usable; }

void* AllocPagesZeroed(size_t bytes) {
  auto p = g_pages.Alloc(mem::PageAllocator::OrderForBytes(bytes));
  if (!p.ok()) {
    OnOutOfMemory(bytes, mem::kPageSize);
    return nullptr;
  }
  std::memset(*p, 0, mem::kPageSize << *g_pages.OrderOf(*p));
  return *p;
}

void FreePages(void* p, size_t bytes) {
  (void)bytes;  // the allocator knows the block's order
  if (!g_pages.Free(p).ok()) LOG_WARN("mem: munmap of %p (%zu bytes) is not a whole mapping; ignored", p, bytes);
}

uintptr_t AllocStack(size_t bytes, const char* name) {
  auto block = g_pages.Alloc(mem::PageAllocator::OrderForBytes(bytes + mem::kPageSize));
  if (!block.ok()) return 0;
  uintptr_t base = reinterpret_cast<uintptr_t>(*block);
  size_t size = mem::kPageSize << *g_pages.OrderOf(*block);
  if (!paging::UnmapPage(base).ok()) return 0;
  paging::NameRegion(base, base + mem::kPageSize, name);
  return base + size;
}

void FreeStack(uintptr_t top, size_t bytes) {
  size_t size = mem::kPageSize << mem::PageAllocator::OrderForBytes(bytes + mem::kPageSize);
  uintptr_t base = top - size;
  paging::UnnameRegion(base);
  if (!paging::MapPage(base).ok() || !g_pages.Free(reinterpret_cast<void*>(base)).ok()) {
    LOG_ERROR("mem: could not free the stack at %#lx", (unsigned long)base);
  }
}

}  // namespace fox::memory

// The C allocation functions, on the fox heap.
extern "C" {

void* malloc(size_t size) {
  void* p = fox::memory::g_heap.Alloc(size, 16);
  if (p == nullptr) errno = ENOMEM;
  return p;
}

void free(void* p) { fox::memory::g_heap.Free(p); }

void* calloc(size_t n, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  void* p = malloc(total);
  if (p != nullptr) std::memset(p, 0, total);
  return p;
}

void* realloc(void* p, size_t size) {
  void* q = fox::memory::g_heap.Realloc(p, size);
  if (q == nullptr && size != 0) errno = ENOMEM;
  return q;
}

void* aligned_alloc(size_t align, size_t size) {
  if (align == 0 || (align & (align - 1)) != 0) {
    errno = EINVAL;
    return nullptr;
  }
  void* p = fox::memory::g_heap.Alloc(size, align < 16 ? 16 : align);
  if (p == nullptr) errno = ENOMEM;
  return p;
}

void* memalign(size_t align, size_t size) { return aligned_alloc(align, size); }

int posix_memalign(void** out, size_t align, size_t size) {
  if (align < sizeof(void*) || (align & (align - 1)) != 0) return EINVAL;
  void* p = fox::memory::g_heap.Alloc(size, align < 16 ? 16 : align);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}

size_t malloc_usable_size(void* p) { return p ? fox::memory::g_heap.UsableSize(p) : 0; }

}  // extern "C"
