// Large messages as fragments (the Messenger's SendLarge, messenger.h): the
// wire format and the receiving side's reassembly, as pure logic (no
// transport, no clock, no locks) so that host tests and a fuzzer drive it.
//
// A fragment, little-endian:
//   u64 message id (the sender's counter), u32 target Ebb id, u16 target
//   handler, u16 zero, u32 total length, u32 offset, then the bytes.
// A sender sends a message's fragments in offset order over one ordered
// channel, so the receiver sees each message's fragments in order (other
// messages' fragments may come in between).
//
// Reassembler: one per node; single-threaded (the Messenger calls it from
// events on one core). Allocates (a message's buffer, whole, at its first
// fragment), so not for interrupt context. Memory is bounded: a message over
// max_message, or one that would take the unfinished messages past
// max_partial, is dropped (its remaining fragments are swallowed quietly).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "fox/function.h"
#include "fox/net/ids.h"

namespace fox::ebb {

inline constexpr size_t kFragmentHeaderBytes = 24;

// Writes the header of the fragment of `message` at `offset` into `out`.
void EncodeFragmentHeader(uint8_t* out, uint64_t message, EbbId ebb, HandlerId handler, uint32_t total,
                          uint32_t offset);

class Reassembler {
 public:
  using Deliver = Function<void(uint32_t from, EbbId ebb, HandlerId handler, std::vector<uint8_t> data)>;
  // `why` is a static string; said for each dropped message or stray fragment.
  using Drop = Function<void(uint32_t from, const char* why)>;

  Reassembler(size_t max_message, size_t max_partial, Deliver deliver, Drop drop)
      : max_message_(max_message), max_partial_(max_partial), deliver_(std::move(deliver)), drop_(std::move(drop)) {}

  // One fragment from node `from` (any bytes: malformed ones are dropped).
  void OnFragment(uint32_t from, const uint8_t* data, size_t length);
  // Node `from` died: its unfinished messages go; returns how many.
  size_t DropFrom(uint32_t from);

  size_t partial_bytes() const { return partial_bytes_; }
  size_t partial_messages() const { return partials_.size(); }

 private:
  struct Partial {
    EbbId ebb{0};
    HandlerId handler;
    size_t total = 0, received = 0;
    std::vector<uint8_t> data;  // `total` bytes, filled up to `received` (empty when discarding)
    bool discard = false;       // dropped at its first fragment: the rest is swallowed
  };
  using Map = std::map<std::pair<uint32_t, uint64_t>, Partial>;
  void Forget(Map::iterator it);

  size_t max_message_, max_partial_;
  Deliver deliver_;
  Drop drop_;
  Map partials_;
  size_t partial_bytes_ = 0;
};

}  // namespace fox::ebb
