// The serving side (node.h): the node's messages (home core: flush, count,
// joins, confirm), a key's messages (events on its shard's core: get,
// write, replicate, collect), and gets and writes applied at the key's
// primary, whether they came through the transport or from a caller on
// this node (GetHere, WriteHere, CallLocal: no transport).
//
// A write replicates the key's state as it is when sent (after the apply:
// that write's or a newer one), so an acknowledged write's version or a
// newer one is on every owner; replicas order states by version, whatever
// their arrival (replication.cc).
#include "fox/clock.h"
#include "fox/ebb/lifetime.h"
#include "fox/event.h"
#include "fox/net/am.h"
#include "fox/net/wire.h"
#include "fox/timer.h"
#include "node.h"

namespace fox::ebb::dht {

// ---- the node's messages (home core)

void Node::Serve(NodeId from, HandlerId handler, const uint8_t* data, size_t length) {
  auto request = Rpc::ParseRequest(data, length);
  if (!request) return Count(&Stats::bad_requests);  // no request id: nothing to answer
  switch (Raw(handler)) {
    case kFlush: return ServeFlush(from, request->id, request->body, request->length);
    case kCount: return ServeCount(from, request->id);
    case kJoin: return ServeJoin(from, request->id);
    case kMoved: return ServeMoved(from, request->id, request->body, request->length);
    case kJoinSwitch: return ServeJoinSwitch(from, request->id, request->body, request->length);
    case kConfirm:  // a node the transport holds dead gets no answer: its frames are dropped
      return Answer(from, request->id, am::State(from) == am::PeerState::kDead ? Error::kPeerDead : Error::kOk);
    default: Count(&Stats::bad_requests); Answer(from, request->id, Error::kInvalidArgument);
  }
}

void Node::ServeFlush(NodeId from, uint64_t id, const uint8_t* body, size_t length) {
  if (length != 4) {
    Count(&Stats::bad_requests);
    return Answer(from, id, Error::kInvalidArgument);
  }
  uint32_t delay_s = net::wire::Load32(body);
  auto flush = [this] {
    OnEveryShard([this](Shard& s) {
      size_t flushed;
      {
        EventMutexGuard g(s.items_lock, kOnShardCore);
        flushed = s.items.Flush();
      }
      StartCollecting(s);
      s.Count(&Stats::flushed, flushed);
    });
  };
  if (delay_s == 0) {
    flush();
  } else {
    event::Spawn([delay_s, flush] {
      timer::Sleep(uint64_t(delay_s) * 1'000'000'000);
      flush();
    });
  }
  Answer(from, id, Error::kOk);
}

void Node::ServeCount(NodeId from, uint64_t id) {
  auto ring = rings_.ring();
  uint64_t counts[kShards][2] = {};  // items, bytes: each shard writes its own
  if (ring) {
    OnEveryShard([&](Shard& s) {
      uint64_t now = clock::NowNs();
      NodeId self = am::Self();
      EventMutexGuard g(s.items_lock, kOnShardCore);
      s.items.ForEach([&](const std::string& key, const DhtEntry& e) {
        if (!e.live(now) || ring->PrimaryOf(HashOf(key)) != self) return;
        ++counts[s.index][0];
        counts[s.index][1] += key.size() + e.value.size();
      });
    });
  }
  uint64_t items = 0, bytes = 0;
  for (auto& c : counts) {
    items += c[0];
    bytes += c[1];
  }
  std::vector<uint8_t> payload(16);
  net::wire::StoreLe<uint64_t>(payload.data(), items);
  net::wire::StoreLe<uint64_t>(payload.data() + 8, bytes);
  Answer(from, id, Error::kOk, payload);
}

// ---- a key's messages (events on its shard's core)

void Node::ServeShard(Shard& s, NodeId from, HandlerId handler, const uint8_t* data, size_t length) {
  auto request = Rpc::ParseRequest(data, length);
  if (!request) {  // no request id: nothing to answer
    s.Count(&Stats::bad_requests);
    return;
  }
  ServeKey(s, Caller{from, request->id, nullptr}, handler, request->body, request->length);
}

void Node::ServeKey(Shard& s, const Caller& caller, HandlerId handler, const uint8_t* body, size_t length) {
  switch (Raw(handler)) {
    case kGet: return ServeGet(s, caller, body, length);
    case kWrite: return ServeWrite(s, caller, body, length);
    case kReplicate: return ServeReplicate(s, caller, body, length, /*write=*/true);
    case kCopy: return ServeReplicate(s, caller, body, length, /*write=*/false);
    case kCollect: return ServeCollect(s, caller, body, length);
    default: s.Count(&Stats::bad_requests); Reply(caller, Error::kInvalidArgument);
  }
}

void Node::Reply(const Caller& caller, Error status, const std::vector<uint8_t>& payload) {
  if (caller.local) return caller.local->SetValue(ReplyBytes(status, payload));
  Answer(caller.node, caller.id, status, payload);
}

bool Node::Primary(Shard& s, uint64_t key_hash) {
  const Rings::Copy& rings = rings_.Renew(s.rings);
  return rings.ring && rings.ring->PrimaryOf(key_hash) == am::Self();
}

// ---- gets

template <class Use>
Error Node::Look(Shard& s, std::string_view key, uint64_t key_hash, Use&& use) {
  Error status = Error::kOk;
  if (Dht::ShardOf(key_hash) != s.index) {
    status = Error::kInvalidArgument;
  } else if (!Primary(s, key_hash)) {
    status = Error::kBusy;
  } else if (!HoldsLease(s, key_hash)) {
    status = Error::kBusy;  // the caller retries: the ring drops a dead owner, or this zombie is fenced
  } else {
    OpenReads(s);
    SharedRead reading;
    const DhtEntry* entry = s.shared_items().FindLive(key, clock::NowNs);
    if (entry == nullptr) {
      status = Error::kNotFound;
    } else {
      use(*entry);
    }
  }
  SpinGuard g(s.lock);
  ++(status == Error::kInvalidArgument ? s.stats.bad_requests
     : status == Error::kBusy          ? s.stats.not_primary
                                       : s.stats.served_gets);
  return status;
}

void Node::ServeGet(Shard& s, const Caller& caller, const uint8_t* body, size_t length) {
  auto key = dht_wire::DecodeKey(body, length);
  std::vector<uint8_t> item;
  Error status = Error::kInvalidArgument;
  if (key.ok()) {
    status = Look(s, *key, HashOf(*key), [&item](const DhtEntry& entry) { item = dht_wire::EncodeItem(entry); });
  } else {
    s.Count(&Stats::bad_requests);
  }
  Reply(caller, status, item);
}

// ---- writes

void Node::ServeWrite(Shard& s, const Caller& caller, const uint8_t* body, size_t length) {
  auto write = dht_wire::DecodeWrite(body, length);  // a copy: this event blocks below
  if (!write.ok() || !InShard(write->key, s.index)) {
    s.Count(&Stats::bad_requests);
    return Reply(caller, write.ok() ? Error::kInvalidArgument : write.error());
  }
  ApplyWrite(s, caller.node, *write, &caller, [&caller, mode = write->mode](Error status, const DhtEntry* entry) {
    if (status != Error::kOk) return Reply(caller, status);
    if (DhtWriteAnswersItem(mode)) return Reply(caller, Error::kOk, dht_wire::EncodeItem(*entry));
    std::vector<uint8_t> cas(8);
    net::wire::StoreLe<uint64_t>(cas.data(), entry->version);
    Reply(caller, Error::kOk, cas);
  });
}

template <class Answer>
void Node::ApplyWrite(Shard& s, NodeId from, const DhtWrite& write, const Caller* holder, Answer&& answer) {
  // A dead caller's write (it waited in the mailbox while the transport
  // declared it dead) is never applied: Quiesce. This node is never dead to
  // itself (and its own writes skip the transport's lock).
  if (from != am::Self() && am::State(from) == am::PeerState::kDead) return answer(Error::kPeerDead, nullptr);
  // A write that may wait is held in `waiters`, which only this core's
  // writes wake: the other cores' writes end first (WriteShared).
  if (DhtWriteWaits(write.mode)) CloseWrites(s);
  struct InProgress {  // counted until answered (replication included)
    Shard& s;
    NodeId from;
    InProgress(Shard& s_, NodeId f) : s(s_), from(f) { ++s.in_progress[from]; }
    ~InProgress() {
      if (--s.in_progress[from] == 0) s.in_progress.erase(from);
    }
  } in_progress(s, from);
  uint64_t hash = HashOf(write.key);
  if (!Primary(s, hash)) {
    s.Count(&Stats::not_primary);
    return answer(Error::kBusy, nullptr);
  }
  auto applied = [&] {
    EventMutexGuard g(s.items_lock, kOnShardCore);
    return s.items.Write(write, clock::NowNs());
  }();
  if (!applied.ok() && applied.error() == Error::kBusy && DhtWriteWaits(write.mode)) {
    if (write.wait_ms == 0) return answer(Error::kTimedOut, nullptr);
    if (holder == nullptr) return answer(Error::kBusy, nullptr);  // nobody to hold it for: the routed path does
    return Hold(s, Waiter{*holder, write, clock::NowNs() + uint64_t(write.wait_ms) * 1'000'000});
  }
  if (!applied.ok()) return answer(applied.error(), nullptr);
  if (write.mode == DhtWrite::Mode::kWait) return answer(Error::kOk, &*applied);
  if (s.waiters.empty()) OpenWrites(s);
  if (applied->tombstone) StartCollecting(s);  // only a delete adds one
  Wake(s, write.key);
  s.Count(write.mode == DhtWrite::Mode::kDelete ? &Stats::served_deletes : &Stats::served_writes);
  if (!Replicate(s, write.key, hash)) return answer(Error::kTimedOut, nullptr);
  answer(Error::kOk, &*applied);
}

// ---- calls whose primary is this node (no transport)

Result<std::vector<uint8_t>> Node::CallLocal(uint64_t key_hash, HandlerId handler, const std::vector<uint8_t>& body) {
  Shard& s = ShardFor(key_hash);
  Caller caller{am::Self(), 0, std::make_shared<Promise<Result<std::vector<uint8_t>>>>()};
  auto reply = caller.local->GetFuture();
  // Inline on the shard's core, else there while this event is blocked (the
  // request stays in this frame). A held request is answered later, through
  // the promise.
  event::Delegate(s.core, [&] { ServeKey(s, caller, handler, body.data(), body.size()); });
  return reply.Block();
}

Shard* Node::ShardHere(uint64_t key_hash) {
  const DhtRing* ring = CallersRing();
  if (!ring || ring->nodes().empty() || ring->PrimaryOf(key_hash) != am::Self()) return nullptr;
  return &ShardFor(key_hash);
}

std::optional<Result<Dht::Item>> Node::Answered(Error status, Item&& item) {
  if (status == Error::kBusy) return std::nullopt;  // the routed path retries as the ring settles
  if (status != Error::kOk) return status;
  return std::move(item);
}

std::optional<Result<Dht::Item>> Node::GetHere(const std::string& key, uint64_t key_hash) {
  Shard* here = ShardHere(key_hash);
  if (here == nullptr) return std::nullopt;
  Shard& s = *here;
  if (s.core != core::Current()) {
    if (auto read = ReadShared(s, key)) return read;
  }
  Error status = Error::kOk;
  Item item;
  event::Delegate(s.core, [&] {  // inline on the shard's core, else there while this event is blocked
    status = Look(s, key, key_hash, [&item](const DhtEntry& entry) {
      item = Item{entry.value, entry.flags, entry.version};
    });
  });
  return Answered(status, std::move(item));
}

std::optional<Result<Dht::Item>> Node::WriteHere(const DhtWrite& write, uint64_t key_hash) {
  Shard* here = DhtWriteWaits(write.mode) ? nullptr : ShardHere(key_hash);
  if (here == nullptr) return std::nullopt;
  Shard& s = *here;
  if (s.core != core::Current()) {
    if (auto done = WriteShared(s, write, key_hash)) return done;
  }
  Error status = Error::kOk;
  Item item;
  event::Delegate(s.core, [&] {  // inline on the shard's core, else there while this event is blocked
    ApplyWrite(s, am::Self(), write, nullptr, [&](Error st, const DhtEntry* entry) {
      status = st;
      if (st != Error::kOk) return;
      item = AnswerOf(write, *entry);
    });
  });
  return Answered(status, std::move(item));
}

}  // namespace fox::ebb::dht
