// Packet: received bytes as an lwIP pbuf chain, readable from any core.
// pbuf reference counts are not atomic (lwIP's memory is the stack core's),
// so the last reference is dropped there.
#include "fox/net/ip.h"
#include "lwip/pbuf.h"
#include "stack.h"

namespace fox::net {

namespace {
struct pbuf* P(void* p) {
  return static_cast<struct pbuf*>(p);
}
}  // namespace

Packet& Packet::operator=(Packet&& o) noexcept {
  if (this != &o) {
    Release();
    pbuf_ = o.pbuf_;
    o.pbuf_ = nullptr;
  }
  return *this;
}

void Packet::Release() {
  void* p = pbuf_;
  if (p == nullptr) return;
  pbuf_ = nullptr;
  lwip::RunOnStack([p] { pbuf_free(P(p)); });
}

size_t Packet::size() const { return pbuf_ ? P(pbuf_)->tot_len : 0; }

size_t Packet::CopyTo(void* out, size_t length, size_t offset) const {
  if (pbuf_ == nullptr || offset >= size()) return 0;
  if (length > size() - offset) length = size() - offset;
  return pbuf_copy_partial(P(pbuf_), out, uint16_t(length), uint16_t(offset));
}

std::string Packet::ToString() const {
  std::string s(size(), '\0');
  CopyTo(s.data(), s.size());
  return s;
}

void Packet::ForEachChunk(Function<void(const uint8_t*, size_t)> fn) const {
  for (struct pbuf* q = P(pbuf_); q != nullptr; q = q->next) {
    if (q->len > 0) fn(static_cast<const uint8_t*>(q->payload), q->len);
  }
}

}  // namespace fox::net
