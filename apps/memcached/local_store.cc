#include "fox/memcached/local_store.h"

#include <charconv>
#include <utility>

namespace fox::memcached {

namespace {

// memcached's rule for the value incr/decr work on: decimal digits (memcached
// itself may leave trailing spaces after an in-place decr), at most a uint64.
bool ParseCounter(std::string_view s, uint64_t* out) {
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  if (s.empty() || s.size() > 20) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

const char* StatusName(Status status) {
  switch (status) {
    case Status::kOk: return "ok";
    case Status::kNotFound: return "not found";
    case Status::kExists: return "exists";
    case Status::kNotStored: return "not stored";
    case Status::kNonNumeric: return "non-numeric";
    case Status::kTooLarge: return "too large";
    case Status::kNoMemory: return "no memory";
    case Status::kUnavailable: return "unavailable";
  }
  return "?";
}

LocalStore::Map::iterator LocalStore::Find(std::string_view key, Time now) {
  if (pending_flush_ != 0 && now >= pending_flush_) {
    items_.clear();
    bytes_ = 0;
    pending_flush_ = 0;
  }
  auto it = items_.find(key);
  if (it != items_.end() && IsExpired(it->second.expiry, now)) {
    Erase(it);
    return items_.end();
  }
  return it;
}

void LocalStore::Erase(Map::iterator it) {
  bytes_ -= it->first.size() + it->second.value.size();
  items_.erase(it);
}

Status LocalStore::Write(std::string_view key, Map::iterator it, std::string value, uint32_t flags, Expiry expiry,
                         uint64_t* new_cas) {
  if (value.size() > options_.max_value_bytes) return Status::kTooLarge;
  uint64_t old_bytes = it == items_.end() ? 0 : key.size() + it->second.value.size();
  uint64_t new_bytes = key.size() + value.size();
  if (bytes_ - old_bytes + new_bytes > options_.max_bytes) return Status::kNoMemory;
  if (it == items_.end()) it = items_.emplace(std::string(key), Entry{}).first;
  bytes_ = bytes_ - old_bytes + new_bytes;
  it->second.value = std::move(value);
  it->second.flags = flags;
  it->second.expiry = expiry;
  it->second.cas = next_cas_++;
  ++total_items_;
  if (new_cas != nullptr) *new_cas = it->second.cas;
  return Status::kOk;
}

Status LocalStore::Get(std::string_view key, Time now, Item* item) {
  auto it = Find(key, now);
  if (it == items_.end()) return Status::kNotFound;
  *item = Item{it->second.value, it->second.flags, it->second.cas};
  return Status::kOk;
}

Status LocalStore::Touch(std::string_view key, Expiry expiry, Time now, Item* item) {
  auto it = Find(key, now);
  if (it == items_.end()) return Status::kNotFound;
  it->second.expiry = expiry;
  if (item != nullptr) *item = Item{it->second.value, it->second.flags, it->second.cas};
  return Status::kOk;
}

Status LocalStore::Put(const Mutation& m, Time now, uint64_t* new_cas) {
  auto it = Find(m.key, now);
  bool present = it != items_.end();
  if (m.mode == StoreMode::kAdd && present) return Status::kNotStored;
  if (!present && (m.mode == StoreMode::kReplace || m.mode == StoreMode::kAppend || m.mode == StoreMode::kPrepend))
    return Status::kNotStored;
  if (m.check_cas) {
    if (!present) return Status::kNotFound;
    if (it->second.cas != m.cas) return Status::kExists;
  }
  switch (m.mode) {
    case StoreMode::kAppend:
    case StoreMode::kPrepend: {
      const Entry& e = it->second;
      if (e.value.size() + m.value.size() > options_.max_value_bytes) return Status::kTooLarge;
      std::string joined;
      joined.reserve(e.value.size() + m.value.size());
      if (m.mode == StoreMode::kAppend) {
        joined.append(e.value).append(m.value);
      } else {
        joined.append(m.value).append(e.value);
      }
      return Write(m.key, it, std::move(joined), e.flags, e.expiry, new_cas);
    }
    default: return Write(m.key, it, std::string(m.value), m.flags, m.expiry, new_cas);
  }
}

Status LocalStore::Delete(std::string_view key, bool check_cas, uint64_t cas, Time now) {
  auto it = Find(key, now);
  if (it == items_.end()) return Status::kNotFound;
  if (check_cas && it->second.cas != cas) return Status::kExists;
  Erase(it);
  return Status::kOk;
}

Status LocalStore::Apply(const Arithmetic& a, Time now, uint64_t* value, uint64_t* new_cas) {
  auto it = Find(a.key, now);
  if (it == items_.end()) {
    if (!a.create) return Status::kNotFound;
    *value = a.initial;
    return Write(a.key, it, std::to_string(a.initial), 0, a.expiry, new_cas);
  }
  if (a.check_cas && it->second.cas != a.cas) return Status::kExists;
  uint64_t n;
  if (!ParseCounter(it->second.value, &n)) return Status::kNonNumeric;
  if (a.increment) {
    n += a.delta;  // wraps modulo 2^64, as memcached
  } else {
    n = a.delta > n ? 0 : n - a.delta;
  }
  *value = n;
  return Write(a.key, it, std::to_string(n), it->second.flags, it->second.expiry, new_cas);
}

void LocalStore::Flush(Time when, Time now) {
  if (when <= now) {
    items_.clear();
    bytes_ = 0;
    pending_flush_ = 0;
  } else {
    pending_flush_ = when;
  }
}

StoreStats LocalStore::Stats(Time now) {
  Find({}, now);  // applies a due flush
  StoreStats s;
  s.curr_items = items_.size();  // expired items not yet touched count until then, as in memcached
  s.total_items = total_items_;
  s.bytes = bytes_;
  s.limit_maxbytes = options_.max_bytes;
  return s;
}

}  // namespace fox::memcached
