// RecordRing: variable-length records in one buffer allocated up front.
// The transport's two queues are made of it: the per-core mailboxes
// (am_mailbox.cc: records appended in delivery context, consumed by events
// of one core) and the endpoint's deferred buffer (am_endpoint.cc: replies
// waiting for a peer's window, under the transport lock).
//
// A record is an 8-byte header (total size, kind, padding, a 16-bit tag the
// user chooses) and its payload padded to 8 bytes. A record that would
// cross the end of the buffer is preceded by a skip record filling the end,
// so every payload is contiguous. Records leave in order (Front/Pop), or
// out of order: MarkDone flags any record and Release moves the tail over
// the leading run of done records and skips.
//
// Concurrency: one producer (Reserve/Commit) and one consumer (every other
// call) may run on different cores at once; head and tail are atomics with
// release/acquire ordering, so a committed record is fully visible to the
// consumer and a released byte is free for the producer. Nothing here
// allocates after Init, blocks or throws: Reserve and Commit are safe at
// interrupt level.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "fox/result.h"

namespace fox::net {

class RecordRing {
 public:
  static constexpr size_t kHeaderBytes = 8;

  // A record as the consumer sees it.
  struct Record {
    uint64_t position = 0;  // of its header, as a running byte count
    uint64_t next = 0;      // position of the record after it
    uint16_t tag = 0;
    bool done = false;  // MarkDone was called on it
    uint8_t* payload = nullptr;
    size_t length = 0;  // payload bytes, as reserved
  };

  RecordRing() = default;
  RecordRing(const RecordRing&) = delete;
  RecordRing& operator=(const RecordRing&) = delete;

  // Allocates `bytes` (rounded up to 8; at least 64). kAlreadyExists,
  // kNoMemory. Normal context.
  Result<void> Init(size_t bytes);
  bool initialized() const { return buffer_ != nullptr; }
  size_t capacity() const { return size_; }

  // Bytes a record of `length` payload bytes takes, and the most it can
  // take with the skip that may precede it. A producer that has checked
  // Room() >= WorstCase(n) can append a record of n bytes.
  static size_t Footprint(size_t length) { return kHeaderBytes + ((length + 7) & ~size_t{7}); }
  static size_t WorstCase(size_t length) { return 2 * Footprint(length) - 8; }
  // Bytes free now (either side may call it; a lower bound for the producer).
  size_t Room() const;
  bool Empty() const;

  // Producer: room for a record of `length` bytes with `tag`, or nullptr
  // when the ring lacks it. The record becomes visible at Commit; the
  // producer must Commit (or not Reserve again) before the next Reserve.
  uint8_t* Reserve(size_t length, uint16_t tag);
  void Commit();

  // Consumer: the oldest record that is not done, moving the tail over
  // done records and skips in front of it; false when there is none.
  bool Front(Record* record);
  // Consumer: frees the record Front returned.
  void Pop(const Record& record);

  // Consumer, out of order: the record at `position` (from tail() on,
  // following `next`), skips passed over; false at the head.
  bool At(uint64_t position, Record* record) const;
  uint64_t tail() const { return tail_.load(std::memory_order_relaxed); }
  void MarkDone(const Record& record);
  // Moves the tail over done records and skips at its front.
  void Release();
  // Forgets every record (consumer; no producer may run).
  void Clear() { tail_.store(head_.load(std::memory_order_relaxed), std::memory_order_release); }

 private:
  struct Header;
  bool Skip(uint64_t* position) const;  // past a skip record at *position

  std::unique_ptr<uint8_t[]> buffer_;
  size_t size_ = 0;
  uint64_t reserved_ = 0;                      // producer: head after the pending record
  alignas(64) std::atomic<uint64_t> head_{0};  // bytes produced (committed)
  alignas(64) std::atomic<uint64_t> tail_{0};  // bytes released by the consumer
};

}  // namespace fox::net
