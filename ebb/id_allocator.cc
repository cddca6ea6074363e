// Dynamic id allocation (see fox/ebb/id_allocator.h).
#include "fox/ebb/id_allocator.h"

#include "fox/ebb/errors.h"
#include "internal.h"

namespace fox::ebb {

Result<IdRange> LocalIdRangeSource::AcquireRange(uint32_t count) {
  if (count == 0) return Error::kInvalidArgument;
  SpinGuard guard(lock_);
  if (end_ - next_ < count) return Error::kOutOfRange;  // next_ <= end_ always
  IdRange range{static_cast<EbbId>(next_), count};
  next_ += count;
  return range;
}

Result<EbbId> IdAllocator::Allocate() {
  for (;;) {
    IdRangeSource* source;
    uint64_t generation;
    {
      SpinGuard guard(lock_);
      if (next_ < end_) {
        allocated_.fetch_add(1, std::memory_order_relaxed);
        return static_cast<EbbId>(next_++);
      }
      if (spare_.count != 0) {
        next_ = Raw(spare_.first);
        end_ = next_ + spare_.count;
        spare_ = {};
        continue;
      }
      source = source_;
      generation = generation_;
    }
    // The source may block (a network round trip): no lock held.
    FOX_TRY_ASSIGN(IdRange range, source->AcquireRange(range_size_));
    if (range.count == 0 || !IsDynamicId(range.first) ||
        uint64_t{Raw(range.first)} + range.count - 1 > Raw(kLastDynamicId)) {
      return Error::kCorrupt;
    }
    SpinGuard guard(lock_);
    if (generation != generation_) {
      abandoned_.fetch_add(range.count, std::memory_order_relaxed);
    } else if (next_ >= end_) {
      next_ = Raw(range.first);
      end_ = next_ + range.count;
    } else if (spare_.count == 0) {
      spare_ = range;  // another core refilled first; keep this one for later
    } else {
      abandoned_.fetch_add(range.count, std::memory_order_relaxed);
    }
  }
}

void IdAllocator::SetSource(IdRangeSource* source) {
  SpinGuard guard(lock_);
  abandoned_.fetch_add(end_ - next_ + spare_.count, std::memory_order_relaxed);
  source_ = source;
  ++generation_;
  next_ = end_ = 0;
  spare_ = {};
}

namespace {
constinit LocalIdRangeSource g_local_source(kFirstDynamicId, EbbId{Raw(kFirstGlobalDynamicId) - 1});
constinit IdAllocator g_default_allocator(&g_local_source);
}  // namespace

EbbId AllocateId() {
  Result<EbbId> id = g_default_allocator.Allocate();
  if (!id.ok()) throw IdExhaustedError();
  return *id;
}

void SetIdRangeSource(IdRangeSource* source) { g_default_allocator.SetSource(source); }

uint64_t detail::DefaultIdsAllocated() { return g_default_allocator.allocated(); }

}  // namespace fox::ebb
