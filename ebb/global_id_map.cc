// GlobalIdMap over the Messenger (global_id_map.h).
//
// Wire format (little-endian), to and from the Ebb kGlobalIdMapId:
//   request  handler kAcquire | kSet | kLookup: u64 request id, then
//            kAcquire: u32 count;  kSet: u32 id, value bytes;  kLookup: u32 id
//   reply    handler kReply: u64 request id, u32 status (fox::Error), then
//            kAcquire: u32 first, u32 count;  kLookup: value bytes
// Requests and replies go through one Mailbox per node (an event on the core
// that created the map), so server state needs no lock. A reply is sent by
// an event of its own, which may block while the client's window is full.
#include "fox/ebb/global_id_map.h"

#include <cstring>
#include <vector>

#include "fox/core.h"
#include "fox/ebb/messenger.h"
#include "fox/event.h"
#include "fox/log.h"
#include "fox/net/wire.h"

namespace fox::ebb {
namespace {
enum : uint16_t { kAcquire = 1, kSet = 2, kLookup = 3, kReply = 4 };
using net::wire::Load32;
using net::wire::Load64;
using net::wire::Store32;
using net::wire::Store64;
}  // namespace

struct GlobalIdMap::Pending {
  uint16_t kind;
  Promise<Result<IdRange>> range;
  Promise<Result<void>> done;
  Promise<Result<std::string>> value;
  void Fail(Error e) {
    if (kind == kAcquire) range.SetValue(e);
    if (kind == kSet) done.SetValue(e);
    if (kind == kLookup) value.SetValue(e);
  }
};

class GlobalIdMap::Source final : public IdRangeSource {
 public:
  explicit Source(GlobalIdMap* map) : map_(map) {}
  Result<IdRange> AcquireRange(uint32_t count) override { return map_->AcquireRange(count).Block(); }

 private:
  GlobalIdMap* map_;
};

GlobalIdMap::GlobalIdMap()
    : mailbox_(std::make_unique<am::Mailbox>(
          core::Current(),
          [this](am::NodeId from, uint16_t handler, const uint8_t* data, size_t len) {
            OnMessage(from, handler, data, len);
          },
          size_t{1} << 20)),
      source_(std::make_unique<Source>(this)) {
  if (auto r = Messenger::Get()->Listen(kGlobalIdMapId, mailbox_.get()); !r.ok()) {
    LOG_ERROR("GlobalIdMap: cannot receive messages: %s", ErrorName(r.error()));
  }
  am::OnPeerState([this](am::NodeId node, am::PeerState state) {
    if (node == server_ && state == am::PeerState::kDead) FailAll(Error::kNotFound);
  });
}

GlobalIdMap::~GlobalIdMap() { Messenger::Get()->StopListening(kGlobalIdMapId); }

IdRangeSource* GlobalIdMap::RangeSource() { return source_.get(); }

uint64_t GlobalIdMap::Request(uint16_t handler, const void* body, size_t len, std::shared_ptr<Pending> p) {
  uint64_t id;
  {
    SpinGuard g(lock_);
    id = next_request_++;
    pending_[id] = p;
  }
  std::vector<uint8_t> msg(8 + len);
  Store64(msg.data(), id);
  if (len > 0) std::memcpy(msg.data() + 8, body, len);
  auto r = Messenger::Get()->SendWait(server_, kGlobalIdMapId, handler, msg.data(), msg.size());
  if (!r.ok()) {
    {
      SpinGuard g(lock_);
      pending_.erase(id);
    }
    p->Fail(r.error());
  }
  return id;
}

Future<Result<IdRange>> GlobalIdMap::AcquireRange(uint32_t count) {
  auto p = std::make_shared<Pending>();
  p->kind = kAcquire;
  auto f = p->range.GetFuture();
  if (count == 0) {
    p->range.SetValue(Error::kInvalidArgument);
    return f;
  }
  uint8_t body[4];
  Store32(body, count);
  Request(kAcquire, body, sizeof body, p);
  return f;
}

Future<Result<void>> GlobalIdMap::Set(EbbId id, std::string value) {
  auto p = std::make_shared<Pending>();
  p->kind = kSet;
  auto f = p->done.GetFuture();
  if (value.size() > kMaxValue) {
    p->done.SetValue(Error::kOutOfRange);
    return f;
  }
  std::vector<uint8_t> body(4 + value.size());
  Store32(body.data(), id);
  std::memcpy(body.data() + 4, value.data(), value.size());
  Request(kSet, body.data(), body.size(), p);
  return f;
}

Future<Result<std::string>> GlobalIdMap::Lookup(EbbId id) {
  auto p = std::make_shared<Pending>();
  p->kind = kLookup;
  auto f = p->value.GetFuture();
  uint8_t body[4];
  Store32(body, id);
  Request(kLookup, body, sizeof body, p);
  return f;
}

void GlobalIdMap::FailAll(Error error) {
  std::map<uint64_t, std::shared_ptr<Pending>> failed;
  {
    SpinGuard g(lock_);
    failed.swap(pending_);
  }
  for (auto& [id, p] : failed) p->Fail(error);
}

// Mailbox event: requests (we serve) and replies (we asked).
void GlobalIdMap::OnMessage(am::NodeId from, uint16_t handler, const uint8_t* data, size_t len) {
  if (handler != kReply) {
    Serve(from, handler, data, len);
    return;
  }
  if (len < 12) return;  // malformed: nothing to match it with
  uint64_t request = Load64(data);
  auto status = static_cast<Error>(Load32(data + 8));
  std::shared_ptr<Pending> p;
  {
    SpinGuard g(lock_);
    auto it = pending_.find(request);
    if (it == pending_.end()) return;  // answered already (a duplicate cannot happen; be safe)
    p = it->second;
    pending_.erase(it);
  }
  if (status != Error::kOk) {
    p->Fail(status);
    return;
  }
  if (p->kind == kAcquire) {
    if (len < 20) return p->Fail(Error::kCorrupt);
    p->range.SetValue(IdRange{Load32(data + 12), Load32(data + 16)});
  } else if (p->kind == kSet) {
    p->done.SetValue(Result<void>{});
  } else {
    p->value.SetValue(std::string(reinterpret_cast<const char*>(data + 12), len - 12));
  }
}

void GlobalIdMap::Serve(am::NodeId from, uint16_t handler, const uint8_t* data, size_t len) {
  if (len < 8) return;  // no request id: nothing to answer
  std::vector<uint8_t> reply(12);
  std::memcpy(reply.data(), data, 8);
  Error status = Error::kOk;
  if (handler == kAcquire && len == 12) {
    uint32_t count = Load32(data + 8);
    if (count == 0 || next_id_ + count - 1 > kLastDynamicId) {
      status = count == 0 ? Error::kInvalidArgument : Error::kOutOfRange;
    } else {
      reply.resize(20);
      Store32(reply.data() + 12, uint32_t(next_id_));
      Store32(reply.data() + 16, count);
      next_id_ += count;
      ++ranges_served_;
    }
  } else if (handler == kSet && len >= 12 && len - 12 <= kMaxValue) {
    values_[Load32(data + 8)] = std::string(reinterpret_cast<const char*>(data + 12), len - 12);
  } else if (handler == kLookup && len == 12) {
    auto it = values_.find(Load32(data + 8));
    if (it == values_.end()) {
      status = Error::kNotFound;
    } else {
      reply.insert(reply.end(), it->second.begin(), it->second.end());
    }
  } else {
    status = Error::kInvalidArgument;  // unknown handler or malformed body
  }
  Store32(reply.data() + 8, uint32_t(status));
  // A reply may wait for the client's window: not in the mailbox's drain.
  event::Spawn([from, reply = std::move(reply)] {
    if (!Messenger::Get()->SendWait(from, kGlobalIdMapId, kReply, reply.data(), reply.size()).ok()) {
      LOG_WARN("GlobalIdMap: reply to node %u lost (node dead)", from);
    }
  });
}

}  // namespace fox::ebb
