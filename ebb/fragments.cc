// Reassembly of large messages (fragments.h).
#include "fox/ebb/fragments.h"

#include <cstring>
#include <iterator>

#include "fox/net/wire.h"

namespace fox::ebb {

using net::wire::Load16;
using net::wire::Load32;
using net::wire::Load64;

void EncodeFragmentHeader(uint8_t* out, uint64_t message, EbbId ebb, HandlerId handler, uint32_t total,
                          uint32_t offset) {
  net::wire::Store64(out, message);
  net::wire::Store32(out + 8, Raw(ebb));
  net::wire::Store16(out + 12, Raw(handler));
  net::wire::Store16(out + 14, 0);
  net::wire::Store32(out + 16, total);
  net::wire::Store32(out + 20, offset);
}

void Reassembler::OnFragment(uint32_t from, const uint8_t* data, size_t length) {
  if (length < kFragmentHeaderBytes) return drop_(from, "a fragment shorter than its header");
  uint64_t message = Load64(data);
  EbbId ebb{Load32(data + 8)};
  HandlerId handler{Load16(data + 12)};
  size_t total = Load32(data + 16), offset = Load32(data + 20);
  size_t chunk = length - kFragmentHeaderBytes;
  if (Load16(data + 14) != 0) return drop_(from, "a fragment with reserved bits set");
  auto key = std::make_pair(from, message);
  auto it = partials_.find(key);
  if (it == partials_.end()) {
    if (offset != 0) return drop_(from, "a fragment of a message whose start never came");
    Partial p;
    p.ebb = ebb;
    p.handler = handler;
    p.total = total;
    const char* why = total > max_message_                    ? "longer than the largest message"
                      : total > max_partial_ - partial_bytes_ ? "reassembly memory is full"
                                                              : nullptr;
    if (why != nullptr) {
      p.discard = true;
      drop_(from, why);
    } else {
      p.data.resize(total);
      partial_bytes_ += total;
    }
    it = partials_.emplace(key, std::move(p)).first;
  }
  Partial& p = it->second;
  if (offset != p.received || chunk > p.total - p.received || p.ebb != ebb || p.handler != handler ||
      total != p.total) {
    if (!p.discard) drop_(from, "a fragment out of place");
    Forget(it);  // what follows of it is "a fragment of a message whose start never came"
    return;
  }
  if (!p.discard && chunk != 0) std::memcpy(p.data.data() + offset, data + kFragmentHeaderBytes, chunk);
  p.received += chunk;
  if (p.received < p.total) return;
  bool whole = !p.discard;
  std::vector<uint8_t> bytes = std::move(p.data);
  Forget(it);
  if (whole) deliver_(from, ebb, handler, std::move(bytes));
}

size_t Reassembler::DropFrom(uint32_t from) {
  size_t dropped = 0;
  for (auto it = partials_.lower_bound({from, 0}); it != partials_.end() && it->first.first == from;) {
    auto next = std::next(it);
    dropped += it->second.discard ? 0 : 1;
    Forget(it);
    it = next;
  }
  return dropped;
}

void Reassembler::Forget(Map::iterator it) {
  if (!it->second.discard) partial_bytes_ -= it->second.total;
  partials_.erase(it);
}

}  // namespace fox::ebb
