// The BuddyStore's messages (buddy_wire.h) and BuddyStore::Write, which
// makes a write's message.
#include "buddy_wire.h"

#include <algorithm>
#include <stdexcept>

#include "fox/ebb/rpc.h"
#include "fox/net/wire.h"

namespace fox::apgas {

BuddyStore::Write::Write() : bytes_(ebb::Rpc::kRequestHeader) {}

size_t BuddyStore::Write::Begin(const std::string& key) {
  if (key.empty()) throw std::invalid_argument("apgas: buddy store: an empty key");
  size_t begin = bytes_.size();
  spans_.push_back(detail::BuddySpan{key, 0, begin - ebb::Rpc::kRequestHeader, 0});
  return begin;
}

namespace detail {

void BuddyWrites::PutHeld(BuddyStore::Write& w, const std::string& key, const Value& v) {
  w.Begin(key);
  w.bytes_.insert(w.bytes_.end(), v.data(), v.data() + v.size);
  w.spans_.back().size = v.size;
  w.spans_.back().seq = v.seq;
}

std::shared_ptr<std::vector<uint8_t>> BuddyWrites::Finish(BuddyStore::Write&& w, const std::string& store,
                                                          uint32_t owner, uint64_t seq) {
  if (seq != 0) {
    for (BuddySpan& s : w.spans_) s.seq = seq;
  }
  auto message = std::make_shared<std::vector<uint8_t>>(std::move(w.bytes_));
  size_t before = message->size();
  OutArchive out(*message);
  out(WriteHead{store, owner, std::move(w.spans_)});
  uint8_t length[8];
  net::wire::Store64(length, message->size() - before);
  message->insert(message->end(), length, length + 8);
  return message;
}

WriteHead BuddyWrites::Parse(const std::vector<uint8_t>& message, size_t body) {
  if (message.size() < body + 8) throw cereal::Exception("apgas: a buddy store write too short for its head");
  size_t length = message.size() - body;
  uint64_t head = net::wire::Load64(message.data() + message.size() - 8);
  if (head > length - 8) throw cereal::Exception("apgas: a buddy store write's head beyond the write");
  size_t values = length - 8 - head;
  InArchive in(message.data() + body + values, head);
  WriteHead w;
  in(w);
  for (const BuddySpan& s : w.spans) {
    if (s.key.empty() || s.offset > values || s.size > values - s.offset) {
      throw cereal::Exception("apgas: a buddy store write's value beyond its bytes");
    }
  }
  return w;
}

void StorePart(uint8_t* out, const PartHeader& h) {
  net::wire::Store64(out, h.write);
  net::wire::Store64(out + 8, h.total);
  net::wire::Store64(out + 16, h.offset);
}

PartHeader LoadPart(const uint8_t* data, size_t length) {
  if (length < kPartHeaderBytes) throw cereal::Exception("apgas: a buddy store part too short for its header");
  return PartHeader{net::wire::Load64(data), net::wire::Load64(data + 8), net::wire::Load64(data + 16)};
}

Found ReadFound(const std::vector<uint8_t>& reply) {
  InArchive in(reply.data(), reply.size());
  Found f;
  in(f.found, f.seq, f.total);
  f.length = in.remaining();
  f.bytes = reply.data() + (reply.size() - f.length);
  if (f.length > f.total || f.length > BuddyStore::kPartBytes) {
    throw cereal::Exception("apgas: a buddy store read's part longer than its value");
  }
  return f;
}

std::vector<uint8_t> FoundReply(size_t room, const Value* v, uint64_t offset, uint64_t max) {
  uint64_t total = v != nullptr ? v->size : 0;
  offset = std::min(offset, total);
  size_t n = size_t(std::min<uint64_t>({max, BuddyStore::kPartBytes, total - offset}));
  std::vector<uint8_t> reply(room);
  reply.reserve(room + 32 + n);
  OutArchive out(reply);
  out(v != nullptr, v != nullptr ? v->seq : uint64_t(0), total);
  if (n != 0) reply.insert(reply.end(), v->data() + offset, v->data() + offset + n);
  return reply;
}

}  // namespace detail
}  // namespace fox::apgas
