// BuddyStore (buddy_store.h): the client side (Set, reads, the death hook)
// and the service's state and requests (buddy_service.h).
#include "fox/apgas/buddy_store.h"

#include <cstdio>
#include <set>
#include <stdexcept>

#include "buddy_service.h"
#include "fox/ebb/messenger.h"
#include "fox/ebb/rpc.h"
#include "fox/event.h"
#include "fox/function.h"
#include "fox/log.h"
#include "runtime.h"

namespace fox::apgas {
namespace detail {
namespace {

constexpr uint64_t kTimeoutMs = 60'000;  // a backup of 48 MiB between emulated nodes

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
std::vector<uint8_t> Request(const T& value, size_t reserve = 0) {
  std::vector<uint8_t> message(ebb::Rpc::kRequestHeader);
  message.reserve(ebb::Rpc::kRequestHeader + reserve + 256);
  OutArchive out(message);
  out(value);
  return message;
}

// A request (Request's message) to the BuddyService at `place`; blocks the
// calling activity.
Result<ebb::Rpc::Bytes> Call(uint32_t place, uint16_t handler, std::vector<uint8_t> message) {
  auto* activity = event::Local();
  auto r = ebb::Rpc::Get()->Call(place, ebb::kBuddyStoreId, handler, std::move(message), kTimeoutMs).Block();
  event::Local() = activity;
  return r;
}

[[noreturn]] void Fail(const std::string& store, const char* what, Error error) {
  throw std::runtime_error("apgas: buddy store " + store + ": " + what + ": " + ErrorName(error));
}

// Sends a backup of store `store` (the message `make` makes: Request's) to
// this place's buddy (the next live place, another one if it dies first);
// the buddy it reached, or nullopt if this place is alone.
std::optional<uint32_t> SendToBuddy(const std::string& store, Function<std::vector<uint8_t>()> make) {
  std::set<uint32_t> died;
  for (;;) {
    auto buddy = NextLive(here().id, died);
    if (!buddy) return std::nullopt;
    auto r = Call(*buddy, BuddyService::kBackup, make());
    if (r.ok()) return buddy;
    if (r.error() != Error::kNotFound) Fail(store, "a backup", r.error());
    died.insert(*buddy);
  }
}
std::optional<uint32_t> SendToBuddy(const BuddyWrite& write) {
  return SendToBuddy(write.store, [&] { return Request(write); });
}

// A dead place's death at this place: what it was buddy of goes to this
// place's next buddy, and its values held here to this place's buddy too.
void Rereplicate(uint32_t dead) {
  auto service = BuddyService::Get();
  for (const BuddyWrite& w : service->MastersBackedUpAt(dead)) {
    std::vector<std::string> keys;
    uint64_t seq = 0;
    for (const BuddyEntry& e : w.entries) {
      keys.push_back(e.key);
      seq = std::max(seq, e.seq);
    }
    if (auto buddy = SendToBuddy(w)) (void)service->SetBuddy(w.store, keys, seq, *buddy);
    service->Count(&BuddyStore::Stats::rereplicated, w.entries.size());
  }
  for (const BuddyWrite& w : service->BackupsOf(dead)) {
    (void)SendToBuddy(w);
    service->Count(&BuddyStore::Stats::rereplicated, w.entries.size());
  }
}

}  // namespace

BuddyService::BuddyService() {
  (void)ebb::Rpc::Get()->pending();  // constructs the Rpc Ebb here: replies need it
  auto serve = [this](NodeId from, uint16_t handler, const uint8_t* data, size_t length) {
    Serve(from, handler, data, length);
  };
  if (auto r = ebb::Messenger::Get()->ListenAny(ebb::kBuddyStoreId, serve); !r.ok()) {
    LOG_ERROR("apgas: the buddy store cannot receive messages: %s", ErrorName(r.error()));
  }
  Runtime::Get()->AddDeathHook([](uint32_t dead) {
    try {
      Rereplicate(dead);
    } catch (const std::exception& e) {  // a hook must not throw: say so, the finish goes on
      std::printf("apgas: buddy store: after place %u died: %s\n", dead, e.what());
    }
  });
}

BuddyService::~BuddyService() { ebb::Messenger::Get()->StopListeningAny(ebb::kBuddyStoreId); }

uint64_t BuddyService::PutMasters(const std::string& store, const std::vector<std::pair<std::string, Shared>>& values) {
  SpinGuard g(lock_);
  uint64_t seq = next_seq_++;
  for (const auto& [key, bytes] : values) {
    Master_& m = masters_[{store, key}];
    m.value = Value{seq, bytes};
  }
  return seq;
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

std::optional<BuddyService::Value> BuddyService::Master(const std::string& store, const std::string& key) const {
  SpinGuard g(lock_);
  auto it = masters_.find({store, key});
  if (it == masters_.end()) return std::nullopt;
  return it->second.value;
}

std::optional<BuddyService::Value> BuddyService::Backup(const std::string& store, uint32_t owner,
                                                        const std::string& key) const {
  SpinGuard g(lock_);
  auto it = backups_.find({store, owner, key});
  if (it == backups_.end()) return std::nullopt;
  return it->second;
}

namespace {
// Entries grouped into one Write per store, each of `owner`.
struct Grouped {
  std::map<std::string, BuddyWrite> by_store;
  void Add(const std::string& store, uint32_t owner, BuddyEntry entry) {
    BuddyWrite& w = by_store[store];
    w.store = store;
    w.owner = owner;
    w.entries.push_back(std::move(entry));
  }
  std::vector<BuddyWrite> Writes() {
    std::vector<BuddyWrite> out;
    for (auto& [store, w] : by_store) out.push_back(std::move(w));
    return out;
  }
};
}  // namespace

std::vector<BuddyWrite> BuddyService::MastersBackedUpAt(uint32_t dead) const {
  Grouped g;
  uint32_t me = here().id;
  SpinGuard guard(lock_);
  for (const auto& [where, m] : masters_) {
    if (m.buddy && *m.buddy == dead) g.Add(where.first, me, BuddyEntry{where.second, m.value.seq, *m.value.bytes});
  }
  return g.Writes();
}

std::vector<BuddyWrite> BuddyService::BackupsOf(uint32_t dead) const {
  Grouped g;
  SpinGuard guard(lock_);
  for (const auto& [where, v] : backups_) {
    const auto& [store, owner, key] = where;
    if (owner == dead) g.Add(store, dead, BuddyEntry{key, v.seq, *v.bytes});
  }
  return g.Writes();
}

// A request (a listener event): a malformed one is failed, never applied.
void BuddyService::Serve(NodeId from, uint16_t handler, const uint8_t* data, size_t length) {
  auto request = ebb::Rpc::ParseRequest(data, length);
  if (!request) return;
  try {
    if (handler == kBackup || handler == kForget) {
      auto w = Decode<BuddyWrite>(request->body, request->length);
      std::vector<Shared> keep;  // made outside the lock (copies)
      for (BuddyEntry& e : w.entries) keep.push_back(std::make_shared<const std::vector<uint8_t>>(std::move(e.bytes)));
      {
        SpinGuard g(lock_);
        for (size_t i = 0; i < w.entries.size(); ++i) {
          auto key = std::make_tuple(w.store, w.owner, w.entries[i].key);
          auto it = backups_.find(key);
          if (handler == kForget) {
            if (it != backups_.end() && it->second.seq <= w.entries[i].seq) backups_.erase(it);
          } else if (it == backups_.end() || it->second.seq < w.entries[i].seq) {
            backups_[key] = Value{w.entries[i].seq, keep[i]};
          }
        }
      }
      (void)ebb::Rpc::Reply(from, request->id, nullptr, 0);
    } else if (handler == kRead) {
      auto r = Decode<BuddyRead>(request->body, request->length);
      auto v = r.backup ? Backup(r.store, r.owner, r.key) : Master(r.store, r.key);
      static const std::vector<uint8_t> kNone;
      std::vector<uint8_t> reply(ebb::Rpc::kReplyHeader);
      reply.reserve(ebb::Rpc::kReplyHeader + (v ? v->bytes->size() : 0) + 64);
      OutArchive out(reply);
      out(BuddyFoundRef{bool(v), v ? v->seq : 0, v ? *v->bytes : kNone});
      (void)ebb::Rpc::Reply(from, request->id, std::move(reply));
    } else {
      (void)ebb::Rpc::Fail(from, request->id, Error::kInvalidArgument);
    }
  } catch (const std::exception& e) {
    LOG_WARN("apgas: a malformed buddy store request from place %u: %s", from, e.what());
    (void)ebb::Rpc::Fail(from, request->id, Error::kInvalidArgument);
  }
}

}  // namespace detail

BuddyStore BuddyStore::Make(const std::string& name) {
  if (name.empty()) throw std::invalid_argument("apgas: a buddy store's name is not empty");
  return BuddyStore(name);
}

BuddyStore::Stats BuddyStore::stats() { return detail::BuddyService::Get()->stats(); }

void BuddyStore::SetMany(std::vector<std::pair<std::string, Bytes>> entries) {
  size_t total = 0;
  for (const auto& [key, bytes] : entries) {
    if (key.empty()) throw std::invalid_argument("apgas: buddy store " + name_ + ": an empty key");
    total += bytes.size();
  }
  if (total > kMaxValueBytes) {
    throw std::invalid_argument("apgas: buddy store " + name_ + ": " + std::to_string(total) +
                                " bytes in one write (at most " + std::to_string(kMaxValueBytes) + ")");
  }
  auto service = detail::BuddyService::Get();
  std::vector<std::pair<std::string, detail::Shared>> values;
  for (auto& [key, bytes] : entries) {
    values.emplace_back(key, std::make_shared<const Bytes>(std::move(bytes)));
  }
  uint64_t seq = service->PutMasters(name_, values);
  std::vector<detail::BuddyEntryRef> refs;
  std::vector<std::string> keys;
  for (const auto& [key, bytes] : values) {
    refs.push_back(detail::BuddyEntryRef{key, seq, *bytes});
    keys.push_back(key);
  }
  auto buddy = detail::SendToBuddy(name_, [&] {
    return detail::Request(detail::BuddyWriteRef{name_, here().id, refs}, total);
  });
  if (!buddy) return;  // alone: the master only
  for (auto& [old, moved] : service->SetBuddy(name_, keys, seq, *buddy)) {
    if (isDead(Place{old})) continue;
    detail::BuddyWrite forget{name_, here().id, {}};
    for (std::string& k : moved) forget.entries.push_back(detail::BuddyEntry{std::move(k), seq, {}});
    (void)detail::Call(old, detail::BuddyService::kForget, detail::Request(forget));  // its copy is only memory
  }
}

std::optional<BuddyStore::Bytes> BuddyStore::GetBytes(Place place, const std::string& key) {
  auto service = detail::BuddyService::Get();
  if (place == here()) {
    auto v = service->Master(name_, key);
    if (!v) return std::nullopt;
    service->Count(&Stats::local_reads);
    return *v->bytes;
  }
  auto ask = [&](uint32_t at, bool backup) -> std::optional<detail::BuddyFound> {
    auto r =
        detail::Call(at, detail::BuddyService::kRead, detail::Request(detail::BuddyRead{name_, place.id, key, backup}));
    if (!r.ok()) {
      if (r.error() == Error::kNotFound) return std::nullopt;  // died meanwhile
      detail::Fail(name_, "a read", r.error());
    }
    return detail::Decode<detail::BuddyFound>(r->data(), r->size());
  };
  if (!isDead(place)) {
    if (auto found = ask(place.id, false)) {
      service->Count(&Stats::remote_reads);
      if (!found->found) return std::nullopt;
      return std::move(found->bytes);
    }
  }
  // Dead: the newest of its backups, here and at the live places.
  std::optional<detail::BuddyFound> newest;
  if (auto v = service->Backup(name_, place.id, key)) newest = detail::BuddyFound{true, v->seq, *v->bytes};
  for (Place p : places()) {
    if (p == here() || p == place || isDead(p)) continue;
    auto found = ask(p.id, true);
    if (found && found->found && (!newest || found->seq > newest->seq)) newest = std::move(found);
  }
  if (!newest) return std::nullopt;
  service->Count(&Stats::backup_reads);
  return std::move(newest->bytes);
}

}  // namespace fox::apgas
