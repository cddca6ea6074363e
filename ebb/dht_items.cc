// One node's copies of the Dht's items and the Dht's wire format
// (dht_items.h).
#include "fox/ebb/dht_items.h"

#include <cstring>
#include <string>

#include "fox/net/wire.h"

namespace fox::ebb {
namespace {
using net::wire::Load16;
using net::wire::Load32;
using net::wire::Load64;
using net::wire::StoreLe;

}  // namespace

const DhtEntry* DhtItems::Held(std::string_view key) const { return table_.Find(key); }

namespace {
// The modes whose answer (a counter's value) the record keeps; the others
// answer the version, or (kTouch) the item as it is.
bool RecordsAnswer(DhtWrite::Mode mode) {
  return mode == DhtWrite::Mode::kIncr || mode == DhtWrite::Mode::kDecr || mode == DhtWrite::Mode::kTake;
}

uint64_t ExpiryOf(uint32_t ttl_s, uint64_t now_ns) {
  if (ttl_s == 0) return 0;
  if (ttl_s == DhtWrite::kExpired) return now_ns == 0 ? 1 : now_ns;  // not live from now on (0 means never)
  return now_ns + uint64_t(ttl_s) * 1'000'000'000;
}
}  // namespace

bool DhtParseCounter(std::string_view s, uint64_t* out) {
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  if (s.empty() || s.size() > 20) return false;
  uint64_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    uint64_t digit = uint64_t(c - '0');
    if (n > (UINT64_MAX - digit) / 10) return false;
    n = n * 10 + digit;
  }
  *out = n;
  return true;
}

void DhtItems::AddBytes(size_t n) {
  bytes_ += n;
  pool_unsent_ += int64_t(n);
  if (pool_unsent_ >= kPoolSlack) SendToPool();
}

void DhtItems::SubtractBytes(size_t n) {
  bytes_ -= n;
  pool_unsent_ -= int64_t(n);
  if (pool_unsent_ <= -kPoolSlack) SendToPool();
}

void DhtItems::SendToPool() {
  if (pool_ != nullptr && pool_unsent_ != 0) pool_->fetch_add(size_t(pool_unsent_), std::memory_order_relaxed);
  pool_unsent_ = 0;
}

void DhtItems::Store(std::string_view key, DhtEntry entry) {
  AddBytes(entry.value.size());
  stored_ += entry.tombstone ? 0 : 1;
  bool tombstone = entry.tombstone;
  DhtTable::Replaced was = table_.Put(key, std::move(entry));
  if (was.existed) {
    SubtractBytes(was.value_bytes);
    stored_ -= was.tombstone ? 0 : 1;
  } else {
    AddBytes(key.size());
  }
  if (tombstone) {
    NumberTombstone(std::string(key));
  } else if (!tomb_generation_.empty()) {
    tomb_generation_.erase(std::string(key));
  }
}

void DhtItems::NumberTombstone(const std::string& key) {
  tomb_queue_.emplace_back(++generation_, key);
  tomb_generation_[key] = generation_;
}

std::vector<DhtItems::Tombstone> DhtItems::OldTombstones(uint64_t up_to_generation) {
  std::vector<Tombstone> old;
  while (!tomb_queue_.empty() && tomb_queue_.front().first <= up_to_generation) {
    auto& [generation, key] = tomb_queue_.front();
    auto g = tomb_generation_.find(key);
    const DhtEntry* held = table_.Find(key);
    if (g != tomb_generation_.end() && g->second == generation && held != nullptr && held->tombstone) {
      tomb_generation_.erase(g);  // handed out: Requeue numbers it again
      old.push_back({std::move(key), held->version});
    }
    tomb_queue_.pop_front();
  }
  return old;
}

void DhtItems::Requeue(const std::string& key) {
  const DhtEntry* held = table_.Find(key);
  if (held != nullptr && held->tombstone) NumberTombstone(key);
}

bool DhtItems::Collect(std::string_view key, uint64_t version) {
  const DhtEntry* held = table_.Find(key);
  if (held == nullptr || !held->tombstone || held->version != version) return false;
  return Drop(key);
}

Result<DhtEntry> DhtItems::Write(const DhtWrite& write, uint64_t now_ns) {
  using Mode = DhtWrite::Mode;
  if (write.key.empty() || write.key.size() > kDhtMaxKey || write.value.size() > kDhtMaxValue ||
      write.mode > DhtWrite::kLastMode) {
    return Error::kInvalidArgument;
  }
  const DhtEntry* held = Held(write.key);  // one lookup: Store below is the only change
  if (held != nullptr && write.request != 0) {
    for (const DhtEntry::Applied& a : held->applied) {
      if (a.request != write.request) continue;
      ++deduplicated_;  // sent again after its primary died: applied already
      DhtEntry answer;
      answer.version = a.version;
      answer.flags = held->flags;
      answer.expiry_ns = held->expiry_ns;
      if (RecordsAnswer(write.mode)) answer.value = a.answer;
      if (write.mode == Mode::kTouch) answer.value = held->value;
      return answer;
    }
  }
  const DhtEntry* live = held != nullptr && held->live(now_ns) ? held : nullptr;
  if (write.mode == Mode::kWait || write.mode == Mode::kTake) {
    if (!live) return Error::kBusy;
    uint64_t n = 0;
    bool numeric = DhtParseCounter(live->value, &n);
    if (write.mode == Mode::kWait) {
      if (write.delta == 0) return *live;
      if (!numeric) return Error::kUnsupported;
      if (n < write.delta) return Error::kBusy;
      return *live;
    }
    if (!numeric) return Error::kUnsupported;
    if (n < write.delta) return Error::kBusy;
  }
  bool needs_live = write.mode != Mode::kSet && write.mode != Mode::kAdd;
  bool creates = (write.mode == Mode::kIncr || write.mode == Mode::kDecr) && write.create;
  if (write.mode == Mode::kAdd && live) return Error::kAlreadyExists;
  if (needs_live && !live && !creates) return Error::kNotFound;
  if ((write.check_cas || write.mode == Mode::kCas) && (!live || live->version != write.cas)) {
    return live ? Error::kAlreadyExists : Error::kNotFound;
  }
  DhtEntry entry;
  entry.version = held ? held->version + 1 : 1;
  if (entry.version > kDhtMaxVersion) return Error::kOutOfRange;
  switch (write.mode) {
    case Mode::kSet:
    case Mode::kAdd:
    case Mode::kReplace:
    case Mode::kCas:
      entry.flags = write.flags;
      entry.expiry_ns = ExpiryOf(write.ttl_s, now_ns);
      entry.value = write.value;
      break;
    case Mode::kAppend:
    case Mode::kPrepend:
      if (live->value.size() + write.value.size() > kDhtMaxValue) return Error::kOutOfRange;
      entry.flags = live->flags;
      entry.expiry_ns = live->expiry_ns;
      entry.value.reserve(live->value.size() + write.value.size());
      entry.value.append(write.mode == Mode::kAppend ? live->value : write.value);
      entry.value.append(write.mode == Mode::kAppend ? write.value : live->value);
      break;
    case Mode::kTake: {
      uint64_t n = 0;
      (void)DhtParseCounter(live->value, &n);  // numeric and >= delta: checked above
      entry.flags = live->flags;
      entry.expiry_ns = live->expiry_ns;
      entry.value = std::to_string(n - write.delta);
      break;
    }
    case Mode::kWait: return *live;  // returned above
    case Mode::kIncr:
    case Mode::kDecr: {
      uint64_t n = write.initial;
      if (live) {
        if (!DhtParseCounter(live->value, &n)) return Error::kUnsupported;
        if (write.mode == Mode::kIncr) {
          n += write.delta;  // wraps modulo 2^64, as memcached
        } else {
          n = write.delta > n ? 0 : n - write.delta;
        }
        entry.flags = live->flags;
        entry.expiry_ns = live->expiry_ns;
      } else {
        entry.expiry_ns = ExpiryOf(write.ttl_s, now_ns);
      }
      entry.value = std::to_string(n);
      break;
    }
    case Mode::kTouch:
      entry.flags = live->flags;
      entry.expiry_ns = ExpiryOf(write.ttl_s, now_ns);
      entry.value = live->value;
      break;
    case Mode::kDelete: entry.tombstone = true; break;
  }
  // The record: the held one's newest writes, and this one if named (one
  // allocation: a write's path allocates per item, not per record entry).
  size_t kept = held ? held->applied.size() : 0;
  size_t skip = write.request != 0 && kept >= kDhtRecentWrites ? kept - kDhtRecentWrites + 1 : 0;
  if (kept != 0 || write.request != 0) {
    entry.applied.reserve(kept - skip + (write.request != 0 ? 1 : 0));
    if (held) entry.applied.assign(held->applied.begin() + long(skip), held->applied.end());
    if (write.request != 0) {
      entry.applied.push_back({write.request, entry.version, RecordsAnswer(write.mode) ? entry.value : std::string()});
    }
  }
  if (limit_ != 0 && !entry.tombstone) {
    SendToPool();  // this holder's own bytes exactly; the others' to within their slack
    size_t now = pool_ != nullptr ? pool_->load(std::memory_order_relaxed) : bytes_;
    size_t after = now - (held ? held->value.size() : 0) + (held ? 0 : write.key.size()) + entry.value.size();
    if (after > limit_ && after > now) return Error::kNoMemory;
  }
  DhtEntry answer;  // what the caller needs: not the record, the value only if the mode answers it
  answer.version = entry.version;
  answer.tombstone = entry.tombstone;
  answer.flags = entry.flags;
  answer.expiry_ns = entry.expiry_ns;
  if (DhtWriteAnswersItem(write.mode)) answer.value = entry.value;
  Store(write.key, std::move(entry));
  return answer;
}

bool DhtItems::Drop(std::string_view key) {
  const DhtEntry* held = table_.Find(key);
  if (held == nullptr) return false;
  SubtractBytes(key.size() + held->value.size());
  stored_ -= held->tombstone ? 0 : 1;
  tomb_generation_.erase(std::string(key));
  table_.Erase(key);
  return true;
}

Result<DhtEntry> DhtItems::Delete(std::string_view key, uint64_t now_ns) {
  DhtWrite d;
  d.mode = DhtWrite::Mode::kDelete;
  d.key = std::string(key);
  return Write(d, now_ns);
}

size_t DhtItems::Flush() {
  std::vector<std::string> keys;  // the table is not changed while it is walked
  table_.ForEach([&](const std::string& key, const DhtEntry& entry) {
    if (!entry.tombstone && entry.version < kDhtMaxVersion) keys.push_back(key);  // expired items too: their bytes go
  });
  for (const std::string& key : keys) {
    const DhtEntry& entry = *table_.Find(key);
    DhtEntry tomb;
    tomb.version = entry.version + 1;
    tomb.tombstone = true;
    tomb.applied = entry.applied;
    Store(key, std::move(tomb));
  }
  return keys.size();
}

bool DhtItems::Apply(std::string_view key, DhtEntry entry, bool from_primary) {
  if (entry.tombstone) entry.value.clear();
  if (const DhtEntry* held = Held(key)) {
    bool newer = entry.version > held->version;
    bool overrides = from_primary && entry.version == held->version && !(entry == *held);
    if (!newer && !overrides) return false;
  }
  Store(key, std::move(entry));
  return true;
}

size_t DhtItems::live(uint64_t now_ns) const {
  size_t n = 0;
  table_.ForEach([&](const std::string&, const DhtEntry& entry) { n += entry.live(now_ns); });
  return n;
}

namespace dht_wire {
namespace {
constexpr size_t kWriteHeader = 1 + 1 + 4 + 4 + 8 + 8 + 8 + 4 + 8 + 2;
constexpr size_t kReplicateHeader = 8 + 1 + 4 + 8 + 1 + 2;
constexpr size_t kAppliedHeader = 8 + 8 + 1;
constexpr size_t kItemHeader = 8 + 4;

template <class T>
void Put(std::vector<uint8_t>& out, T v) {
  size_t at = out.size();
  out.resize(at + sizeof(T));
  StoreLe<T>(out.data() + at, v);
}
void PutBytes(std::vector<uint8_t>& out, std::string_view s) { out.insert(out.end(), s.begin(), s.end()); }
std::string Str(const uint8_t* p, size_t n) { return std::string(reinterpret_cast<const char*>(p), n); }
}  // namespace

std::vector<uint8_t> EncodeWrite(const DhtWrite& w) {
  std::vector<uint8_t> out;
  out.reserve(kWriteHeader + w.key.size() + w.value.size());
  Put<uint8_t>(out, uint8_t(w.mode));
  Put<uint8_t>(out, uint8_t((w.check_cas ? 1 : 0) | (w.create ? 2 : 0)));
  Put<uint32_t>(out, w.flags);
  Put<uint32_t>(out, w.ttl_s);
  Put<uint64_t>(out, w.cas);
  Put<uint64_t>(out, w.delta);
  Put<uint64_t>(out, w.initial);
  Put<uint32_t>(out, w.wait_ms);
  Put<uint64_t>(out, w.request);
  Put<uint16_t>(out, uint16_t(w.key.size()));
  PutBytes(out, w.key);
  PutBytes(out, w.value);
  return out;
}

Result<DhtWrite> DecodeWrite(const uint8_t* data, size_t length) {
  if (length < kWriteHeader) return Error::kInvalidArgument;
  DhtWrite w;
  uint8_t mode = data[0], options = data[1];
  if (mode > uint8_t(DhtWrite::kLastMode) || options > 3) return Error::kInvalidArgument;
  w.mode = DhtWrite::Mode(mode);
  w.check_cas = (options & 1) != 0;
  w.create = (options & 2) != 0;
  w.flags = Load32(data + 2);
  w.ttl_s = Load32(data + 6);
  w.cas = Load64(data + 10);
  w.delta = Load64(data + 18);
  w.initial = Load64(data + 26);
  w.wait_ms = Load32(data + 34);
  w.request = Load64(data + 38);
  size_t key_length = Load16(data + 46);
  if (key_length == 0 || key_length > kDhtMaxKey || key_length > length - kWriteHeader) return Error::kInvalidArgument;
  size_t value_length = length - kWriteHeader - key_length;
  if (value_length > kDhtMaxValue) return Error::kInvalidArgument;
  w.key = Str(data + kWriteHeader, key_length);
  w.value = Str(data + kWriteHeader + key_length, value_length);
  return w;
}

Result<std::string> DecodeKey(const uint8_t* data, size_t length) {
  if (length == 0 || length > kDhtMaxKey) return Error::kInvalidArgument;
  return Str(data, length);
}

std::vector<uint8_t> EncodeReplicate(std::string_view key, const DhtEntry& e, uint64_t now_ns) {
  std::vector<uint8_t> out;
  out.reserve(kReplicateHeader + key.size() + e.value.size());
  uint64_t left_ms = 0;
  if (e.expiry_ns != 0) left_ms = e.expiry_ns > now_ns ? (e.expiry_ns - now_ns + 999'999) / 1'000'000 : 1;
  Put<uint64_t>(out, e.version);
  Put<uint8_t>(out, e.tombstone ? 1 : 0);
  Put<uint32_t>(out, e.flags);
  Put<uint64_t>(out, left_ms);
  size_t count = e.applied.size() < kDhtRecentWrites ? e.applied.size() : kDhtRecentWrites;
  Put<uint8_t>(out, uint8_t(count));
  Put<uint16_t>(out, uint16_t(key.size()));
  PutBytes(out, key);
  for (size_t i = e.applied.size() - count; i < e.applied.size(); ++i) {  // the newest
    const DhtEntry::Applied& a = e.applied[i];
    std::string_view answer(a.answer);
    if (answer.size() > kDhtMaxRecordedAnswer) answer = answer.substr(0, kDhtMaxRecordedAnswer);  // cannot happen
    Put<uint64_t>(out, a.request);
    Put<uint64_t>(out, a.version);
    Put<uint8_t>(out, uint8_t(answer.size()));
    PutBytes(out, answer);
  }
  if (!e.tombstone) PutBytes(out, e.value);
  return out;
}

Result<Replicate> DecodeReplicate(const uint8_t* data, size_t length, uint64_t now_ns) {
  if (length < kReplicateHeader) return Error::kInvalidArgument;
  Replicate r;
  r.entry.version = Load64(data);
  uint8_t tombstone = data[8];
  if (r.entry.version == 0 || r.entry.version > kDhtMaxVersion || tombstone > 1) return Error::kInvalidArgument;
  r.entry.tombstone = tombstone == 1;
  r.entry.flags = Load32(data + 9);
  uint64_t left_ms = Load64(data + 13);
  if (left_ms > (uint64_t(1) << 40)) return Error::kInvalidArgument;  // ~35 years: not a real expiry
  r.entry.expiry_ns = left_ms == 0 ? 0 : now_ns + left_ms * 1'000'000;
  size_t count = data[21];
  size_t key_length = Load16(data + 22);
  if (count > kDhtRecentWrites || key_length == 0 || key_length > kDhtMaxKey ||
      key_length > length - kReplicateHeader) {
    return Error::kInvalidArgument;
  }
  r.key = Str(data + kReplicateHeader, key_length);
  size_t at = kReplicateHeader + key_length;
  for (size_t i = 0; i < count; ++i) {
    if (length - at < kAppliedHeader) return Error::kInvalidArgument;
    DhtEntry::Applied a;
    a.request = Load64(data + at);
    a.version = Load64(data + at + 8);
    size_t answer_length = data[at + 16];
    at += kAppliedHeader;
    if (a.request == 0 || a.version == 0 || a.version > r.entry.version || answer_length > kDhtMaxRecordedAnswer ||
        length - at < answer_length) {
      return Error::kInvalidArgument;
    }
    a.answer = Str(data + at, answer_length);
    at += answer_length;
    r.entry.applied.push_back(std::move(a));
  }
  size_t value_length = length - at;
  if (value_length > kDhtMaxValue || (r.entry.tombstone && value_length != 0)) return Error::kInvalidArgument;
  r.entry.value = Str(data + at, value_length);
  return r;
}

std::vector<uint8_t> EncodeItem(const DhtEntry& e) {
  std::vector<uint8_t> out;
  out.reserve(kItemHeader + e.value.size());
  Put<uint64_t>(out, e.version);
  Put<uint32_t>(out, e.flags);
  PutBytes(out, e.value);
  return out;
}

Result<DhtEntry> DecodeItem(const uint8_t* data, size_t length) {
  if (length < kItemHeader || length - kItemHeader > kDhtMaxValue) return Error::kInvalidArgument;
  DhtEntry e;
  e.version = Load64(data);
  e.flags = Load32(data + 8);
  e.value = Str(data + kItemHeader, length - kItemHeader);
  return e;
}

std::vector<uint8_t> EncodeCollect(const std::vector<DhtItems::Tombstone>& tombstones) {
  std::vector<uint8_t> out;
  Put<uint32_t>(out, uint32_t(tombstones.size()));
  for (const DhtItems::Tombstone& t : tombstones) {
    Put<uint64_t>(out, t.version);
    Put<uint16_t>(out, uint16_t(t.key.size()));
    out.insert(out.end(), t.key.begin(), t.key.end());
  }
  return out;
}

Result<std::vector<DhtItems::Tombstone>> DecodeCollect(const uint8_t* data, size_t length) {
  if (length < 4) return Error::kInvalidArgument;
  uint32_t count = Load32(data);
  if (count > length / 11) return Error::kInvalidArgument;  // each takes 11 bytes at least
  std::vector<DhtItems::Tombstone> out;
  out.reserve(count);
  size_t at = 4;
  for (uint32_t i = 0; i < count; ++i) {
    if (length - at < 10) return Error::kInvalidArgument;
    uint64_t version = Load64(data + at);
    size_t key_length = Load16(data + at + 8);
    at += 10;
    if (version == 0 || version > kDhtMaxVersion || key_length == 0 || key_length > kDhtMaxKey ||
        length - at < key_length) {
      return Error::kInvalidArgument;
    }
    out.push_back({std::string(reinterpret_cast<const char*>(data) + at, key_length), version});
    at += key_length;
  }
  if (at != length) return Error::kInvalidArgument;
  return out;
}

}  // namespace dht_wire
}  // namespace fox::ebb
