// Dynamic Ebb ids: allocators that hand out ids from ranges, and the sources
// of those ranges.
//
// An IdAllocator hands out single ids from a range it holds, and takes a new
// range from its IdRangeSource when the range runs out. The source decides
// who else may use an id: LocalIdRangeSource hands out node-local ranges (so
// the same dynamic id may name different Ebbs on different nodes), and the
// frontend's GlobalIdMap will hand out job-wide ranges over the network. Ids
// are never handed out twice by one source, and never reused: a destroyed
// id stays dead.
//
// Errors are values here (Result); AllocateId(), the entry point for users,
// throws.
#pragma once

#include <atomic>
#include <cstdint>

#include "fox/ebb/ebb_id.h"
#include "fox/result.h"
#include "fox/spinlock.h"
#include "fox/thread_annotations.h"

namespace fox::ebb {

// The ids [first, first + count).
struct IdRange {
  EbbId first = kNullId;
  uint32_t count = 0;
};

class IdRangeSource {
 public:
  virtual ~IdRangeSource() = default;
  // A range of `count` (>= 1) dynamic ids that this source never returned
  // before. Thread context, called with no ebb/ lock held, so a source may
  // block (a network source will). Errors: kOutOfRange when the id space is
  // exhausted; a remote source adds its own (kBusy, ...).
  virtual Result<IdRange> AcquireRange(uint32_t count) = 0;
};

// Consecutive node-local ranges from [first, last]. Thread-safe (own lock).
class LocalIdRangeSource final : public IdRangeSource {
 public:
  constexpr LocalIdRangeSource(EbbId first = kFirstDynamicId, EbbId last = kLastDynamicId)
      : next_(Raw(first)), end_(uint64_t{Raw(last)} + 1) {}
  // Errors: kInvalidArgument for count 0, kOutOfRange when fewer than
  // `count` ids remain (the remainder is not handed out).
  Result<IdRange> AcquireRange(uint32_t count) override;

 private:
  SpinLock lock_;
  uint64_t next_ GUARDED_BY(lock_);
  const uint64_t end_;  // exclusive
};

class IdAllocator {
 public:
  static constexpr uint32_t kDefaultRangeSize = 256;

  // `source` is borrowed for the allocator's lifetime (or until SetSource).
  constexpr explicit IdAllocator(IdRangeSource* source, uint32_t range_size = kDefaultRangeSize)
      : source_(source), range_size_(range_size == 0 ? 1 : range_size) {}
  IdAllocator(const IdAllocator&) = delete;
  IdAllocator& operator=(const IdAllocator&) = delete;

  // A dynamic id nobody had from this allocator's source before. Thread
  // context, any core; takes the allocator's lock, and calls the source
  // (possibly blocking) with no lock held when the current range is used up.
  // Errors: the source's, or kCorrupt if it returned a range that is empty
  // or not made of dynamic ids.
  Result<EbbId> Allocate();

  // Takes later ranges from `source` and drops the rest of the current one
  // (ids already handed out stay valid). Thread context.
  void SetSource(IdRangeSource* source);

  // Ids handed out so far, and ids of ranges dropped unused (by SetSource, or
  // when cores racing to refill got one range too many and a spare was
  // already held).
  uint64_t allocated() const { return allocated_.load(std::memory_order_relaxed); }
  uint64_t abandoned() const { return abandoned_.load(std::memory_order_relaxed); }

 private:
  SpinLock lock_;
  IdRangeSource* source_ GUARDED_BY(lock_);
  uint64_t generation_ GUARDED_BY(lock_) = 0;  // bumped by SetSource
  uint64_t next_ GUARDED_BY(lock_) = 0;        // current range [next_, end_)
  uint64_t end_ GUARDED_BY(lock_) = 0;
  IdRange spare_ GUARDED_BY(lock_);
  const uint32_t range_size_;
  std::atomic<uint64_t> allocated_{0};
  std::atomic<uint64_t> abandoned_{0};
};

// A fresh id from the node's default allocator, which takes node-local ranges
// from a LocalIdRangeSource until SetIdRangeSource. Thread context. Throws
// IdExhaustedError.
EbbId AllocateId();

// Makes the default allocator take its ranges from `source` (borrowed,
// must outlive all allocation), dropping its current range. Call it before
// allocating ids that must be unique across the job: ids handed out earlier
// came from node-local ranges. Thread context.
void SetIdRangeSource(IdRangeSource* source);

}  // namespace fox::ebb
