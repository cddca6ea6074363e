// RecordRing (record_ring.h).
#include "fox/net/record_ring.h"

#include <cstring>
#include <new>

namespace fox::net {

struct RecordRing::Header {
  uint32_t total;  // bytes of the record, header included; a multiple of 8
  uint8_t kind;    // kData, kSkip or kDone
  uint8_t pad;     // payload padding bytes (0..7)
  uint16_t tag;
};

namespace {
enum : uint8_t { kData = 0, kSkip = 1, kDone = 2 };
}  // namespace

Result<void> RecordRing::Init(size_t bytes) {
  static_assert(sizeof(Header) == kHeaderBytes);
  if (buffer_ != nullptr) return Error::kAlreadyExists;
  bytes = (bytes + 7) & ~size_t{7};
  if (bytes < 64) bytes = 64;
  buffer_.reset(new (std::nothrow) uint8_t[bytes]);
  if (buffer_ == nullptr) return Error::kNoMemory;
  size_ = bytes;
  return {};
}

size_t RecordRing::Room() const {
  return size_ - size_t(head_.load(std::memory_order_acquire) - tail_.load(std::memory_order_acquire));
}

bool RecordRing::Empty() const {
  return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_acquire);
}

uint8_t* RecordRing::Reserve(size_t length, uint16_t tag) {
  if (buffer_ == nullptr || length > UINT32_MAX / 2) return nullptr;
  size_t total = Footprint(length);
  uint64_t head = head_.load(std::memory_order_relaxed);
  size_t at = size_t(head % size_);
  size_t to_end = size_ - at;
  size_t need = total + (to_end < total ? to_end : 0);
  if (size_ - size_t(head - tail_.load(std::memory_order_acquire)) < need) return nullptr;
  if (to_end < total) {  // a skip fills the end (to_end >= 8: all is 8-aligned)
    Header skip{uint32_t(to_end), kSkip, 0, 0};
    std::memcpy(buffer_.get() + at, &skip, sizeof skip);
    head += to_end;
    at = 0;
  }
  Header h{uint32_t(total), kData, uint8_t(total - kHeaderBytes - length), tag};
  std::memcpy(buffer_.get() + at, &h, sizeof h);
  reserved_ = head + total;
  return buffer_.get() + at + kHeaderBytes;
}

void RecordRing::Commit() {
  if (reserved_ != 0) head_.store(reserved_, std::memory_order_release);
  reserved_ = 0;
}

bool RecordRing::Skip(uint64_t* position) const {
  size_t at = size_t(*position % size_);
  Header h;
  std::memcpy(&h, buffer_.get() + at, sizeof h);
  if (h.kind != kSkip) return false;
  *position += size_ - at;
  return true;
}

bool RecordRing::At(uint64_t position, Record* record) const {
  uint64_t head = head_.load(std::memory_order_acquire);
  if (position == head) return false;
  if (Skip(&position) && position == head) return false;
  size_t at = size_t(position % size_);
  Header h;
  std::memcpy(&h, buffer_.get() + at, sizeof h);
  record->position = position;
  record->next = position + h.total;
  record->tag = h.tag;
  record->done = h.kind == kDone;
  record->payload = buffer_.get() + at + kHeaderBytes;
  record->length = h.total - kHeaderBytes - h.pad;
  return true;
}

bool RecordRing::Front(Record* record) {
  while (At(tail(), record)) {
    if (!record->done) {
      tail_.store(record->position, std::memory_order_release);  // past a skip in front of it
      return true;
    }
    tail_.store(record->next, std::memory_order_release);
  }
  Release();  // a skip with nothing after it
  return false;
}

void RecordRing::Pop(const Record& record) { tail_.store(record.next, std::memory_order_release); }

void RecordRing::MarkDone(const Record& record) {
  uint8_t done = kDone;
  std::memcpy(buffer_.get() + size_t(record.position % size_) + offsetof(Header, kind), &done, 1);
}

void RecordRing::Release() {
  Record r;
  while (At(tail(), &r) && r.done) tail_.store(r.next, std::memory_order_release);
  // A trailing skip with nothing after it: the producer will write past it.
  uint64_t t = tail();
  if (t != head_.load(std::memory_order_acquire) && Skip(&t) && t == head_.load(std::memory_order_acquire)) {
    tail_.store(t, std::memory_order_release);
  }
}

}  // namespace fox::net
