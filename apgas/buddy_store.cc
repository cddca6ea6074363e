// BuddyStore (buddy_store.h): the client side (Commit, reads, the death
// hook) and the service's state and requests (buddy_service.h).
#include "fox/apgas/buddy_store.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>
#include <stdexcept>

#include "buddy_service.h"
#include "fox/ebb/messenger.h"
#include "fox/ebb/rpc.h"
#include "fox/event.h"
#include "fox/log.h"
#include "runtime.h"

namespace fox::apgas {
namespace detail {
namespace {

constexpr uint64_t kTimeoutMs = 60'000;  // a part (32 MiB) between emulated nodes
constexpr int kMaxRereads = 8;           // a value rewritten while read in parts: read again

template <class T>
T Decode(const uint8_t* data, size_t length) {
  InArchive in(data, length);
  T value;
  in(value);
  return value;
}

// The first live place after `after` in the job's order (wrapping around),
// but `after` and those in `skip`.
std::optional<uint32_t> NextLive(uint32_t after, const std::set<uint32_t>& skip) {
  std::vector<Place> all = places();
  for (int pass = 0; pass < 2; ++pass) {
    for (Place p : all) {
      if ((pass == 0 ? p.id > after : p.id < after) && !isDead(p) && skip.count(p.id) == 0) return p.id;
    }
  }
  return std::nullopt;
}

// A request's message: room for the Rpc's id, then `value`'s archive.
template <class T>
std::vector<uint8_t> Request(const T& value) {
  std::vector<uint8_t> message(ebb::Rpc::kRequestHeader);
  OutArchive out(message);
  out(value);
  return message;
}

// A request (its message starting with Rpc's header room) to the
// BuddyService at `place`; blocks the calling activity.
Result<ebb::Rpc::Bytes> Call(uint32_t place, HandlerId handler, std::shared_ptr<std::vector<uint8_t>> message) {
  auto* activity = event::Local();
  auto r = ebb::Rpc::Get()->Call(place, ebb::kBuddyStoreId, handler, std::move(message), kTimeoutMs).Block();
  event::Local() = activity;
  return r;
}
Result<ebb::Rpc::Bytes> Call(uint32_t place, HandlerId handler, std::vector<uint8_t> message) {
  return Call(place, handler, std::make_shared<std::vector<uint8_t>>(std::move(message)));
}

[[noreturn]] void Fail(const std::string& store, const char* what, Error error) {
  throw std::runtime_error("apgas: buddy store " + store + ": " + what + ": " + ErrorName(error));
}

// A write's message (handler kBackup) to `place`: whole if it fits in one
// message, else in parts (each copied out of it).
Result<ebb::Rpc::Bytes> SendWrite(uint32_t place, const std::shared_ptr<std::vector<uint8_t>>& message) {
  if (message->size() <= ebb::Messenger::kMaxLargeBytes) return Call(place, BuddyService::kBackup, message);
  const size_t header = ebb::Rpc::kRequestHeader, body = message->size() - header;
  uint64_t write = BuddyService::Get()->NextWriteId();
  for (size_t offset = 0;;) {
    size_t n = std::min(BuddyStore::kPartBytes, body - offset);
    std::vector<uint8_t> part(header + kPartHeaderBytes + n);
    StorePart(part.data() + header, PartHeader{write, body, offset});
    std::memcpy(part.data() + header + kPartHeaderBytes, message->data() + header + offset, n);
    auto r = Call(place, BuddyService::kPart, std::move(part));
    offset += n;
    if (!r.ok() || offset == body) return r;
  }
}

// Sends a write's message to this place's buddy (the next live place,
// another one if it dies first); the buddy it reached, or nullopt if this
// place is alone.
std::optional<uint32_t> SendToBuddy(const std::string& store, const std::shared_ptr<std::vector<uint8_t>>& message) {
  std::set<uint32_t> died;
  for (;;) {
    auto buddy = NextLive(here().id, died);
    if (!buddy) return std::nullopt;
    auto r = SendWrite(*buddy, message);
    if (r.ok()) return buddy;
    if (r.error() != Error::kPeerDead) Fail(store, "a backup", r.error());
    died.insert(*buddy);
  }
}

// The values held here (copied into a new write) sent to this place's
// buddy; the buddy, or nullopt if this place is alone.
std::optional<uint32_t> Resend(const BuddyService::Held& held) {
  BuddyStore::Write w;
  for (const auto& [key, value] : held.values) BuddyWrites::PutHeld(w, key, value);
  return SendToBuddy(held.store, BuddyWrites::Finish(std::move(w), held.store, held.owner, 0));
}

// A dead place's death at this place: what it was buddy of goes to this
// place's next buddy, and its values held here to this place's buddy too.
void Rereplicate(uint32_t dead) {
  auto service = BuddyService::Get();
  for (const BuddyService::Held& h : service->MastersBackedUpAt(dead)) {
    std::vector<std::string> keys;
    uint64_t seq = 0;
    for (const auto& [key, value] : h.values) {
      keys.push_back(key);
      seq = std::max(seq, value.seq);
    }
    if (auto buddy = Resend(h)) (void)service->SetBuddy(h.store, keys, seq, *buddy);
    service->Count(&BuddyStore::Stats::rereplicated, h.values.size());
  }
  for (const BuddyService::Held& h : service->BackupsOf(dead)) {
    (void)Resend(h);
    service->Count(&BuddyStore::Stats::rereplicated, h.values.size());
  }
}

// What a read of `owner`'s `key` at `at` found.
enum class Fetched { kFound, kMissing, kDied };

// A kRead's reply from `at`; nullopt if `at` died first.
std::optional<ebb::Rpc::Bytes> AskRead(const std::string& store, uint32_t at, const ReadRequest& request) {
  auto r = Call(at, BuddyService::kRead, Request(request));
  if (r.ok()) return std::move(*r);
  if (r.error() != Error::kPeerDead) Fail(store, "a read", r.error());
  return std::nullopt;
}

// Reads `owner`'s `key` from `at` (its master, or a backup there), in parts
// if it is large, and hands it to `use`.
Fetched Fetch(const std::string& store, uint32_t at, uint32_t owner, const std::string& key, bool backup,
              Function<void(const uint8_t*, size_t)>& use) {
  std::vector<uint8_t> whole;
  uint64_t seq = 0, total = 0;
  for (int rereads = 0;;) {
    uint64_t offset = whole.size();
    auto r = AskRead(store, at, ReadRequest{store, owner, key, backup, offset, BuddyStore::kPartBytes});
    if (!r) return Fetched::kDied;
    Found f = ReadFound(*r);
    if (!f.found) return Fetched::kMissing;
    if (offset == 0 && f.length == f.total) {  // one part: decoded where it arrived
      use(f.bytes, f.length);
      return Fetched::kFound;
    }
    if (offset == 0) {
      seq = f.seq;
      total = f.total;
      whole.reserve(total);
    } else if (f.seq != seq || f.total != total) {  // written again meanwhile
      if (++rereads == kMaxRereads) Fail(store, "a read of a value rewritten while it was read", Error::kBusy);
      whole.clear();
      continue;
    }
    if (f.length == 0 || f.length > total - whole.size()) Fail(store, "a read's part", Error::kInvalidArgument);
    whole.insert(whole.end(), f.bytes, f.bytes + f.length);
    if (whole.size() == total) {
      use(whole.data(), whole.size());
      return Fetched::kFound;
    }
  }
}

}  // namespace

BuddyService::BuddyService() {
  (void)ebb::Rpc::Get()->pending();  // constructs the Rpc Ebb here: replies need it
  auto serve = [this](NodeId from, HandlerId handler, std::vector<uint8_t> message) {
    Serve(from, handler, std::move(message));
  };
  if (auto r = ebb::Messenger::Get()->ListenAnyOwned(ebb::kBuddyStoreId, serve); !r.ok()) {
    LOG_ERROR("apgas: the buddy store cannot receive messages: %s", ErrorName(r.error()));
  }
  Runtime::Get()->AddDeathHook([](uint32_t dead) {
    BuddyService::Get()->DropParts(dead);
    try {
      Rereplicate(dead);
    } catch (const std::exception& e) {  // a hook must not throw: say so, the finish goes on
      std::printf("apgas: buddy store: after place %u died: %s\n", dead, e.what());
    }
  });
}

BuddyService::~BuddyService() { ebb::Messenger::Get()->StopListeningAny(ebb::kBuddyStoreId); }

uint64_t BuddyService::NextSeq() {
  SpinGuard g(lock_);
  return next_seq_++;
}

uint64_t BuddyService::NextWriteId() {
  SpinGuard g(lock_);
  return next_write_++;
}

void BuddyService::PutMasters(const std::string& store, const Shared& message, size_t body,
                              const std::vector<BuddySpan>& spans) {
  SpinGuard g(lock_);
  for (const BuddySpan& s : spans) {
    Master_& m = masters_[{store, s.key}];
    if (m.value.message && m.value.seq > s.seq) continue;  // a later write got here first
    m.value = Value{s.seq, message, body + s.offset, s.size};
  }
}

std::map<uint32_t, std::vector<std::string>> BuddyService::SetBuddy(const std::string& store,
                                                                    const std::vector<std::string>& keys, uint64_t seq,
                                                                    uint32_t buddy) {
  std::map<uint32_t, std::vector<std::string>> moved;
  SpinGuard g(lock_);
  for (const std::string& key : keys) {
    auto it = masters_.find({store, key});
    if (it == masters_.end() || it->second.value.seq > seq) continue;  // written again since
    if (it->second.buddy && *it->second.buddy != buddy) moved[*it->second.buddy].push_back(key);
    it->second.buddy = buddy;
  }
  return moved;
}

std::optional<Value> BuddyService::Master(const std::string& store, const std::string& key) const {
  SpinGuard g(lock_);
  auto it = masters_.find({store, key});
  if (it == masters_.end()) return std::nullopt;
  return it->second.value;
}

std::optional<Value> BuddyService::Backup(const std::string& store, uint32_t owner, const std::string& key) const {
  SpinGuard g(lock_);
  auto it = backups_.find({store, owner, key});
  if (it == backups_.end()) return std::nullopt;
  return it->second;
}

namespace {
// Values grouped by store, each of one owner.
struct Grouped {
  std::map<std::string, BuddyService::Held> by_store;
  void Add(const std::string& store, uint32_t owner, const std::string& key, const Value& value) {
    BuddyService::Held& h = by_store[store];
    h.store = store;
    h.owner = owner;
    h.values.emplace_back(key, value);
  }
  std::vector<BuddyService::Held> All() {
    std::vector<BuddyService::Held> out;
    for (auto& [store, h] : by_store) out.push_back(std::move(h));
    return out;
  }
};
}  // namespace

std::vector<BuddyService::Held> BuddyService::MastersBackedUpAt(uint32_t dead) const {
  Grouped g;
  uint32_t me = here().id;
  SpinGuard guard(lock_);
  for (const auto& [where, m] : masters_) {
    if (m.buddy && *m.buddy == dead) g.Add(where.first, me, where.second, m.value);
  }
  return g.All();
}

std::vector<BuddyService::Held> BuddyService::BackupsOf(uint32_t dead) const {
  Grouped g;
  SpinGuard guard(lock_);
  for (const auto& [where, v] : backups_) {
    const auto& [store, owner, key] = where;
    if (owner == dead) g.Add(store, dead, key, v);
  }
  return g.All();
}

void BuddyService::DropParts(uint32_t dead) {
  std::vector<Parts> dropped;  // freed outside the lock
  SpinGuard g(lock_);
  for (auto it = parts_.begin(); it != parts_.end();) {
    if (it->first.first != dead) {
      ++it;
      continue;
    }
    dropped.push_back(std::move(it->second));
    it = parts_.erase(it);
  }
}

// A request (a listener event): a malformed one is failed, never applied.
void BuddyService::Serve(NodeId from, HandlerId handler, std::vector<uint8_t> message) {
  auto request = ebb::Rpc::ParseRequest(message.data(), message.size());
  if (!request) return;
  uint64_t id = request->id;
  try {
    if (handler == kBackup || handler == kForget) {
      ApplyBackup(handler, std::make_shared<const std::vector<uint8_t>>(std::move(message)), ebb::Rpc::kRequestHeader);
      (void)ebb::Rpc::Reply(from, id, nullptr, 0);
    } else if (handler == kPart) {
      if (auto body = AddPart(from, request->body, request->length)) {
        ApplyBackup(kBackup, std::make_shared<const std::vector<uint8_t>>(std::move(*body)), 0);
      }
      (void)ebb::Rpc::Reply(from, id, nullptr, 0);
    } else if (handler == kRead) {
      AnswerRead(from, id, request->body, request->length);
    } else {
      (void)ebb::Rpc::Fail(from, id, Error::kInvalidArgument);
    }
  } catch (const std::exception& e) {
    LOG_WARN("apgas: a malformed buddy store request from place %u: %s", from, e.what());
    (void)ebb::Rpc::Fail(from, id, Error::kInvalidArgument);
  }
}

void BuddyService::ApplyBackup(HandlerId handler, const Shared& message, size_t body) {
  WriteHead w = BuddyWrites::Parse(*message, body);
  SpinGuard g(lock_);
  for (const BuddySpan& s : w.spans) {
    auto key = std::make_tuple(w.store, w.owner, s.key);
    auto it = backups_.find(key);
    if (handler == kForget) {
      if (it != backups_.end() && it->second.seq <= s.seq) backups_.erase(it);
    } else if (it == backups_.end() || it->second.seq <= s.seq) {  // the same number: a later span of its write
      backups_[key] = Value{s.seq, message, body + s.offset, s.size};
    }
  }
}

std::optional<std::vector<uint8_t>> BuddyService::AddPart(NodeId from, const uint8_t* data, size_t length) {
  PartHeader h = LoadPart(data, length);
  uint64_t write = h.write, total = h.total, offset = h.offset;
  size_t n = length - kPartHeaderBytes;
  Parts p;  // taken out while it grows (the map is shared with the death hook)
  {
    SpinGuard g(lock_);
    auto it = parts_.find({from, write});
    if (it != parts_.end()) {
      p = std::move(it->second);
      parts_.erase(it);
    }
  }
  if (p.body.empty()) p.length = total;
  if (n == 0 || offset != p.body.size() || total != p.length || n > total - offset) {
    throw cereal::Exception("apgas: a buddy store part out of order or beyond its write");
  }
  if (p.body.empty()) p.body.reserve(total);
  p.body.insert(p.body.end(), data + kPartHeaderBytes, data + length);
  if (p.body.size() == p.length) return std::move(p.body);
  SpinGuard g(lock_);
  parts_[{from, write}] = std::move(p);
  return std::nullopt;
}

void BuddyService::AnswerRead(NodeId from, uint64_t id, const uint8_t* data, size_t length) {
  auto r = Decode<ReadRequest>(data, length);
  auto v = r.backup ? Backup(r.store, r.owner, r.key) : Master(r.store, r.key);
  std::vector<uint8_t> reply = FoundReply(ebb::Rpc::kReplyHeader, v ? &*v : nullptr, r.offset, r.max);
  (void)ebb::Rpc::Reply(from, id, std::move(reply));
}

}  // namespace detail

BuddyStore BuddyStore::Make(const std::string& name) {
  if (name.empty()) throw std::invalid_argument("apgas: a buddy store's name is not empty");
  return BuddyStore(name);
}

BuddyStore::Stats BuddyStore::stats() { return detail::BuddyService::Get()->stats(); }

void BuddyStore::Commit(Write write) {
  if (write.size() == 0) return;
  auto service = detail::BuddyService::Get();
  uint64_t seq = service->NextSeq();
  std::vector<detail::BuddySpan> spans = detail::BuddyWrites::Spans(write);  // as Finish numbers them
  std::vector<std::string> keys;
  for (detail::BuddySpan& s : spans) {
    s.seq = seq;
    keys.push_back(s.key);
  }
  auto message = detail::BuddyWrites::Finish(std::move(write), name_, here().id, seq);
  service->PutMasters(name_, message, ebb::Rpc::kRequestHeader, spans);
  auto buddy = detail::SendToBuddy(name_, message);
  if (!buddy) return;  // alone: the master only
  for (auto& [old, moved] : service->SetBuddy(name_, keys, seq, *buddy)) {
    if (isDead(Place{old})) continue;
    BuddyStore::Write none;
    for (std::string& k : moved) none.Begin(k);
    (void)detail::Call(old, detail::BuddyService::kForget,
                       detail::BuddyWrites::Finish(std::move(none), name_, here().id, seq));  // its copy is only memory
  }
}

void BuddyStore::Read(Place place, const std::string& key, Function<void(const uint8_t*, size_t)> use) {
  auto service = detail::BuddyService::Get();
  if (place == here()) {
    auto v = service->Master(name_, key);
    if (!v) return;
    service->Count(&Stats::local_reads);
    use(v->data(), v->size);
    return;
  }
  using detail::Fetched;
  if (!isDead(place)) {
    Fetched f = detail::Fetch(name_, place.id, place.id, key, false, use);
    if (f == Fetched::kFound) service->Count(&Stats::remote_reads);
    if (f != Fetched::kDied) return;
  }
  // Dead: the newest of its backups, here or at a live place (asked for
  // its number first, then read from the one that has the newest).
  for (std::set<uint32_t> gone;;) {
    std::optional<uint32_t> best;
    uint64_t best_seq = 0;
    std::optional<detail::Value> mine = service->Backup(name_, place.id, key);
    if (mine) {
      best = here().id;
      best_seq = mine->seq;
    }
    for (Place p : places()) {
      if (p == here() || p == place || isDead(p) || gone.count(p.id) != 0) continue;
      auto r = detail::AskRead(name_, p.id, detail::ReadRequest{name_, place.id, key, true, 0, 0});
      if (!r) continue;  // died meanwhile
      detail::Found f = detail::ReadFound(*r);
      if (f.found && (!best || f.seq > best_seq)) {
        best = p.id;
        best_seq = f.seq;
      }
    }
    if (!best) return;
    if (*best == here().id) {
      service->Count(&Stats::backup_reads);
      use(mine->data(), mine->size);
      return;
    }
    Fetched f = detail::Fetch(name_, *best, place.id, key, true, use);
    if (f == Fetched::kFound) {
      service->Count(&Stats::backup_reads);
      return;
    }
    gone.insert(*best);  // died, or gave its backup away, since it was asked: ask the others again
  }
}

std::optional<BuddyStore::Bytes> BuddyStore::GetBytes(Place place, const std::string& key) {
  std::optional<Bytes> bytes;
  Read(place, key, [&bytes](const uint8_t* data, size_t size) { bytes.emplace(data, data + size); });
  return bytes;
}

}  // namespace fox::apgas
