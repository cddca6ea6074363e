// Internal: the BuddyStore's messages (buddy_service.h serves them), made
// and read without the runtime, so that they can be fuzzed alone.
//
// A write's message (Rpc's request; its body):
//   the values' bytes, one after another (each a Put's archive)
//   a cereal archive of a WriteHead: store, owner, spans (key, number,
//     offset and size of each value in the body)
//   u64 the head's length (little-endian)
// A holder keeps the message and views of its values: nothing is copied
// out of it.
//
// Requests (Rpc):
//   kBackup  a write: values of `owner` to keep as backups (each replaces
//            an older backup only); reply empty
//   kForget  a write without values: backups of `owner` no longer kept
//            here (its buddy changed); reply empty
//   kPart    u64 write id, u64 the write's body length, u64 offset, then
//            that part of a kBackup's body, which is longer than a message:
//            parts come in order, and the last one applies the write (its
//            reply is the write's); a sender's unfinished parts are dropped
//            at its death
//   kRead    a ReadRequest: `owner`'s `key` from its master (backup false)
//            or from a backup held here (true), the bytes from `offset`,
//            at most `max`; reply a cereal archive of found, number and
//            whole size, then the bytes
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fox/apgas/buddy_store.h"
#include "fox/apgas/serialization.h"

namespace fox::apgas::detail {

using Shared = std::shared_ptr<const std::vector<uint8_t>>;

struct WriteHead {
  std::string store;
  uint32_t owner = 0;
  std::vector<BuddySpan> spans;
  template <class A>
  void serialize(A& ar) {
    ar(store, owner, spans);
  }
};
struct ReadRequest {
  std::string store;
  uint32_t owner = 0;
  std::string key;
  bool backup = false;
  uint64_t offset = 0, max = 0;
  template <class A>
  void serialize(A& ar) {
    ar(store, owner, key, backup, offset, max);
  }
};

// A value held here: bytes inside a message kept whole.
struct Value {
  uint64_t seq = 0;
  Shared message;
  size_t offset = 0, size = 0;
  const uint8_t* data() const { return message->data() + offset; }
};

// A write's message being made (BuddyStore::Write) and read.
struct BuddyWrites {
  // A value put with its number (re-replication keeps the writer's).
  static void PutHeld(BuddyStore::Write& w, const std::string& key, const Value& v);
  // Appends the head (`store`, `owner`, the spans, each numbered `seq`
  // unless 0); the message, shared from now on.
  static std::shared_ptr<std::vector<uint8_t>> Finish(BuddyStore::Write&& w, const std::string& store, uint32_t owner,
                                                      uint64_t seq);
  static const std::vector<BuddySpan>& Spans(const BuddyStore::Write& w) { return w.spans_; }
  // The head of the write whose body is at [body, message end); throws
  // cereal::Exception if it is malformed or a span lies outside the values.
  static WriteHead Parse(const std::vector<uint8_t>& message, size_t body);
};

// A kPart's header, before the part's bytes.
struct PartHeader {
  uint64_t write = 0, total = 0, offset = 0;
};
constexpr size_t kPartHeaderBytes = 24;
void StorePart(uint8_t* out, const PartHeader& h);
// Throws cereal::Exception if `length` is shorter than a header.
PartHeader LoadPart(const uint8_t* data, size_t length);

// A kRead's reply: whether the value is there, its number and whole size,
// and the part of its bytes asked for (pointing into the reply).
struct Found {
  bool found = false;
  uint64_t seq = 0, total = 0;
  const uint8_t* bytes = nullptr;
  size_t length = 0;
};
// Throws cereal::Exception if the reply is malformed (its part longer than
// the value, or past its end).
Found ReadFound(const std::vector<uint8_t>& reply);
// The reply for `v` (none: not found) after `room` bytes (Rpc's reply
// header), with its bytes [offset, offset + max) clamped to the value and
// to kPartBytes.
std::vector<uint8_t> FoundReply(size_t room, const Value* v, uint64_t offset, uint64_t max);

}  // namespace fox::apgas::detail
