// libFuzzer: the BuddyStore's messages (apgas/buddy_wire.h) from untrusted
// bytes, read as its service and clients read them: the first byte picks
// the message, the rest is it. A write that parses has every value inside
// its bytes, and a write made again from what was parsed (as re-replication
// makes one) parses to the same keys, numbers and bytes; a read's reply
// points inside itself; a part's header needs its 24 bytes. Nothing
// crashes, reads past the input or allocates more than it could hold.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <vector>

#include "buddy_wire.h"
#include "fox/ebb/rpc.h"

namespace {
using namespace fox::apgas::detail;
using fox::apgas::BuddyStore;
using fox::apgas::InArchive;

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

void Write(const uint8_t* data, size_t size) {
  auto message = std::make_shared<const std::vector<uint8_t>>(data, data + size);
  WriteHead head;
  try {
    head = BuddyWrites::Parse(*message, 0);
  } catch (const std::exception&) {
    return;  // malformed: the service fails the request
  }
  BuddyStore::Write again;
  for (const BuddySpan& s : head.spans) {
    Check(s.offset + s.size <= size);
    BuddyWrites::PutHeld(again, s.key, Value{s.seq, message, s.offset, s.size});
  }
  auto made = BuddyWrites::Finish(std::move(again), head.store, head.owner, 0);
  WriteHead read = BuddyWrites::Parse(*made, fox::ebb::Rpc::kRequestHeader);  // must not throw
  Check(read.store == head.store && read.owner == head.owner && read.spans.size() == head.spans.size());
  for (size_t i = 0; i < read.spans.size(); ++i) {
    const BuddySpan &a = head.spans[i], &b = read.spans[i];
    Check(a.key == b.key && a.seq == b.seq && a.size == b.size);
    Check(a.size == 0 ||
          std::memcmp(data + a.offset, made->data() + fox::ebb::Rpc::kRequestHeader + b.offset, a.size) == 0);
  }
}

void Reply(const uint8_t* data, size_t size) {
  std::vector<uint8_t> reply(data, data + size);
  try {
    Found f = ReadFound(reply);
    Check(f.length <= f.total && f.bytes >= reply.data() && f.bytes + f.length == reply.data() + reply.size());
  } catch (const std::exception&) {
  }
}

void Request(const uint8_t* data, size_t size) {
  ReadRequest r;
  try {
    InArchive in(data, size);
    in(r);
  } catch (const std::exception&) {
    return;  // malformed: the service fails the request
  }
  // The service answers it from whatever it holds: here, the request's own
  // bytes. Its reply must read back (an exception here escapes: a crash).
  auto held = std::make_shared<const std::vector<uint8_t>>(data, data + size);
  Value v{r.offset, held, 0, size};
  std::vector<uint8_t> reply = FoundReply(0, r.backup ? &v : nullptr, r.offset, r.max);
  Found f = ReadFound(reply);
  Check(f.found == r.backup && f.length <= f.total);
}

void Part(const uint8_t* data, size_t size) {
  try {
    PartHeader h = LoadPart(data, size);
    Check(size >= kPartHeaderBytes);
    uint8_t again[kPartHeaderBytes];
    StorePart(again, h);
    Check(std::memcmp(again, data, kPartHeaderBytes) == 0);
  } catch (const std::exception&) {
    Check(size < kPartHeaderBytes);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  switch (data[0] % 4) {
    case 0: Write(data + 1, size - 1); break;
    case 1: Reply(data + 1, size - 1); break;
    case 2: Request(data + 1, size - 1); break;
    default: Part(data + 1, size - 1); break;
  }
  return 0;
}
