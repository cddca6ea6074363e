// The memcached Store over the Dht (dht_store.h).
#include "fox/memcached/dht_store.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "fox/ebb/dht.h"
#include "fox/log.h"

namespace fox::memcached {
namespace {
using ebb::Dht;
using ebb::DhtWrite;
using Mode = DhtWrite::Mode;

// memcached's absolute expiry as the Dht's time to live.
uint32_t TtlOf(Expiry expiry, Time now) {
  if (expiry == kNeverExpires) return 0;
  if (IsExpired(expiry, now)) return DhtWrite::kExpired;
  int64_t left = expiry - now;
  return left >= int64_t(DhtWrite::kExpired) ? DhtWrite::kExpired - 1 : uint32_t(left);
}

// What the Dht's errors mean to a client, for errors every operation shares.
Status Common(Error e) {
  switch (e) {
    case Error::kNotFound: return Status::kNotFound;
    case Error::kOutOfRange:
    case Error::kInvalidArgument: return Status::kTooLarge;  // the session has checked keys: the value
    case Error::kNoMemory: return Status::kNoMemory;
    default: return Status::kUnavailable;
  }
}

Result<Dht::Item> Write(const DhtWrite& w) { return Dht::Get()->Write(w); }
}  // namespace

Status DhtStore::Get(std::string_view key, Time, Item* item) {
  auto r = Dht::Get()->Get(std::string(key));
  if (!r.ok()) return Common(r.error());
  *item = Item{std::move(r->value), r->flags, r->cas};
  return Status::kOk;
}

Status DhtStore::Touch(std::string_view key, Expiry expiry, Time now, Item* item) {
  DhtWrite w;
  w.mode = Mode::kTouch;
  w.key = std::string(key);
  w.ttl_s = TtlOf(expiry, now);
  auto r = Write(w);
  if (!r.ok()) return Common(r.error());
  if (item != nullptr) *item = Item{std::move(r->value), r->flags, r->cas};
  return Status::kOk;
}

Status DhtStore::Put(const Mutation& m, Time now, uint64_t* new_cas) {
  DhtWrite w;
  switch (m.mode) {
    case StoreMode::kSet: w.mode = Mode::kSet; break;
    case StoreMode::kAdd: w.mode = Mode::kAdd; break;
    case StoreMode::kReplace: w.mode = Mode::kReplace; break;
    case StoreMode::kAppend: w.mode = Mode::kAppend; break;
    case StoreMode::kPrepend: w.mode = Mode::kPrepend; break;
  }
  w.check_cas = m.check_cas;
  w.cas = m.cas;
  w.flags = m.flags;
  w.ttl_s = TtlOf(m.expiry, now);
  w.key = std::string(m.key);
  w.value = std::string(m.value);
  auto r = Write(w);
  if (r.ok()) {
    *new_cas = r->cas;
    return Status::kOk;
  }
  // As LocalStore: add of a present key is not stored before any cas check;
  // a missing key is not found for a cas check, else not stored.
  if (r.error() == Error::kAlreadyExists) return m.mode == StoreMode::kAdd ? Status::kNotStored : Status::kExists;
  if (r.error() == Error::kNotFound) return m.check_cas ? Status::kNotFound : Status::kNotStored;
  return Common(r.error());
}

Status DhtStore::Delete(std::string_view key, bool check_cas, uint64_t cas, Time) {
  DhtWrite w;
  w.mode = Mode::kDelete;
  w.key = std::string(key);
  w.check_cas = check_cas;
  w.cas = cas;
  auto r = Write(w);
  if (r.ok()) return Status::kOk;
  if (r.error() == Error::kAlreadyExists) return Status::kExists;
  return Common(r.error());
}

Status DhtStore::Apply(const Arithmetic& a, Time now, uint64_t* value, uint64_t* new_cas) {
  DhtWrite w;
  w.mode = a.increment ? Mode::kIncr : Mode::kDecr;
  w.key = std::string(a.key);
  w.delta = a.delta;
  w.create = a.create;
  w.initial = a.initial;
  w.ttl_s = TtlOf(a.expiry, now);
  w.check_cas = a.check_cas;
  w.cas = a.cas;
  auto r = Write(w);
  if (!r.ok()) {
    if (r.error() == Error::kUnsupported) return Status::kNonNumeric;
    if (r.error() == Error::kAlreadyExists) return Status::kExists;
    return Common(r.error());
  }
  if (!ebb::DhtParseCounter(r->value, value)) return Status::kUnavailable;  // not a number: not ours
  *new_cas = r->cas;
  return Status::kOk;
}

void DhtStore::Flush(Time when, Time now) {
  uint32_t delay = when <= now ? 0 : uint32_t(std::min<int64_t>(when - now, UINT32_MAX));
  auto r = Dht::Get()->Flush(delay);
  if (!r.ok()) LOG_WARN("memcached: flush_all reached no node: %s", ErrorName(r.error()));
}

StoreStats DhtStore::Stats(Time) {
  Dht::Stats d = Dht::Get()->stats();
  StoreStats s;
  s.distributed = true;
  s.held_items = d.live;
  s.total_items = d.served_writes;
  s.limit_maxbytes = max_bytes_;
  if (auto census = Dht::Get()->Count(); census.ok()) {
    s.curr_items = census->items;
    s.bytes = census->bytes;
    s.limit_maxbytes = max_bytes_ * census->asked;
  } else {  // nobody answered: this node's own share
    s.curr_items = d.live;
    s.bytes = d.bytes;
  }
  return s;
}

}  // namespace fox::memcached
