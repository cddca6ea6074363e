// GlobalIdMap over Rpc (global_id_map.h).
//
// Requests, to the Ebb kGlobalIdMapId on the server (Rpc requests, so each
// body follows the request id):
//   kAcquire: u32 count           reply: u32 first, u32 count
//   kSet:     u32 id, value bytes  reply: empty
//   kLookup:  u32 id               reply: the value bytes (kNotFound: none)
// The server's state is touched only by its listener's events, on the core
// that created the map, so it needs no lock.
#include "fox/ebb/global_id_map.h"

#include <cstring>
#include <vector>

#include "fox/core.h"
#include "fox/ebb/messenger.h"
#include "fox/ebb/rpc.h"
#include "fox/log.h"
#include "fox/net/wire.h"

namespace fox::ebb {
namespace {
enum : uint16_t { kAcquire = 1, kSet = 2, kLookup = 3 };
using net::wire::Load32;
using net::wire::Store32;
}  // namespace

class GlobalIdMap::Source final : public IdRangeSource {
 public:
  explicit Source(GlobalIdMap* map) : map_(map) {}
  Result<IdRange> AcquireRange(uint32_t count) override { return map_->AcquireRange(count).Block(); }

 private:
  GlobalIdMap* map_;
};

GlobalIdMap::GlobalIdMap() : source_(std::make_unique<Source>(this)) {
  (void)Rpc::Get()->pending();  // constructs the Rpc Ebb here: replies need it
  auto serve = [this](NodeId from, HandlerId handler, const uint8_t* data, size_t length) {
    Serve(from, handler, data, length);
  };
  if (auto r = Messenger::Get()->Listen(kGlobalIdMapId, serve); !r.ok()) {
    LOG_ERROR("GlobalIdMap: cannot receive messages: %s", ErrorName(r.error()));
  }
}

GlobalIdMap::~GlobalIdMap() { Messenger::Get()->StopListening(kGlobalIdMapId); }

IdRangeSource* GlobalIdMap::RangeSource() { return source_.get(); }

Future<Result<IdRange>> GlobalIdMap::AcquireRange(uint32_t count) {
  if (count == 0) return MakeReadyFuture(Result<IdRange>(Error::kInvalidArgument));
  uint8_t body[4];
  Store32(body, count);
  return Rpc::Get()->Call(server_, kGlobalIdMapId, kAcquire, body, sizeof body).Then([](auto f) {
    Result<Rpc::Bytes> r = f.Get();
    if (!r.ok()) return Result<IdRange>(r.error());
    if (r->size() != 8) return Result<IdRange>(Error::kCorrupt);
    return Result<IdRange>(IdRange{EbbId{Load32(r->data())}, Load32(r->data() + 4)});
  });
}

Future<Result<void>> GlobalIdMap::Set(EbbId id, std::string value) {
  if (value.size() > kMaxValue) return MakeReadyFuture(Result<void>(Error::kOutOfRange));
  std::vector<uint8_t> body(4 + value.size());
  Store32(body.data(), Raw(id));
  std::memcpy(body.data() + 4, value.data(), value.size());
  return Rpc::Get()->Call(server_, kGlobalIdMapId, kSet, body.data(), body.size()).Then([](auto f) {
    Result<Rpc::Bytes> r = f.Get();
    return r.ok() ? Result<void>{} : Result<void>(r.error());
  });
}

Future<Result<std::string>> GlobalIdMap::Lookup(EbbId id) {
  uint8_t body[4];
  Store32(body, Raw(id));
  return Rpc::Get()->Call(server_, kGlobalIdMapId, kLookup, body, sizeof body).Then([](auto f) {
    Result<Rpc::Bytes> r = f.Get();
    if (!r.ok()) return Result<std::string>(r.error());
    return Result<std::string>(std::string(r->begin(), r->end()));
  });
}

// A request, as an event of the listener's core.
void GlobalIdMap::Serve(NodeId from, HandlerId handler, const uint8_t* data, size_t length) {
  auto request = Rpc::ParseRequest(data, length);
  if (!request) return;  // no request id: nothing to answer
  const uint8_t* body = request->body;
  size_t len = request->length;
  if (handler == kAcquire && len == 4) {
    uint32_t count = Load32(body);
    if (count == 0) {
      (void)Rpc::Fail(from, request->id, Error::kInvalidArgument);
    } else if (next_id_ + count - 1 > Raw(kLastDynamicId)) {
      (void)Rpc::Fail(from, request->id, Error::kOutOfRange);
    } else {
      uint8_t reply[8];
      Store32(reply, uint32_t(next_id_));
      Store32(reply + 4, count);
      next_id_ += count;
      ++ranges_served_;
      (void)Rpc::Reply(from, request->id, reply, sizeof reply);
    }
  } else if (handler == kSet && len >= 4 && len - 4 <= kMaxValue) {
    values_[EbbId{Load32(body)}] = std::string(reinterpret_cast<const char*>(body + 4), len - 4);
    (void)Rpc::Reply(from, request->id, nullptr, 0);
  } else if (handler == kLookup && len == 4) {
    auto it = values_.find(EbbId{Load32(body)});
    if (it == values_.end()) {
      (void)Rpc::Fail(from, request->id, Error::kNotFound);
    } else {
      (void)Rpc::Reply(from, request->id, it->second.data(), it->second.size());
    }
  } else {
    (void)Rpc::Fail(from, request->id, Error::kInvalidArgument);  // unknown handler or malformed body
  }
}

}  // namespace fox::ebb
