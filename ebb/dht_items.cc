// One node's copies of the Dht's items and the Dht's wire format
// (dht_items.h).
#include "fox/ebb/dht_items.h"

#include <cstring>

#include "fox/net/wire.h"

namespace fox::ebb {
namespace {
using net::wire::Load16;
using net::wire::Load32;
using net::wire::Load64;
using net::wire::StoreLe;

bool Expired(const DhtEntry& e, uint64_t now_ns) { return e.expiry_ns != 0 && now_ns >= e.expiry_ns; }
}  // namespace

const DhtEntry* DhtItems::Find(std::string_view key, uint64_t now_ns) const {
  auto it = map_.find(std::string(key));
  if (it == map_.end() || it->second.tombstone || Expired(it->second, now_ns)) return nullptr;
  return &it->second;
}

const DhtEntry* DhtItems::Held(std::string_view key) const {
  auto it = map_.find(std::string(key));
  return it == map_.end() ? nullptr : &it->second;
}

uint64_t DhtItems::NextVersion(std::string_view key) const {
  auto it = map_.find(std::string(key));
  return it == map_.end() ? 1 : it->second.version + 1;
}

Result<DhtEntry> DhtItems::Write(const DhtWrite& write, uint64_t now_ns) {
  if (write.key.empty() || write.key.size() > kDhtMaxKey || write.value.size() > kDhtMaxValue) {
    return Error::kInvalidArgument;
  }
  const DhtEntry* live = Find(write.key, now_ns);
  switch (write.mode) {
    case DhtWrite::Mode::kSet: break;
    case DhtWrite::Mode::kAdd:
      if (live) return Error::kAlreadyExists;
      break;
    case DhtWrite::Mode::kReplace:
      if (!live) return Error::kNotFound;
      break;
    case DhtWrite::Mode::kCas:
      if (!live) return Error::kNotFound;
      if (live->version != write.cas) return Error::kAlreadyExists;
      break;
    default: return Error::kInvalidArgument;
  }
  uint64_t version = NextVersion(write.key);
  if (version > kDhtMaxVersion) return Error::kOutOfRange;
  DhtEntry entry;
  entry.version = version;
  entry.flags = write.flags;
  entry.expiry_ns = write.ttl_s == 0 ? 0 : now_ns + uint64_t(write.ttl_s) * 1'000'000'000;
  entry.value = write.value;
  map_[write.key] = entry;
  return entry;
}

Result<DhtEntry> DhtItems::Delete(std::string_view key, uint64_t now_ns) {
  if (!Find(key, now_ns)) return Error::kNotFound;
  uint64_t version = NextVersion(key);
  if (version > kDhtMaxVersion) return Error::kOutOfRange;
  DhtEntry tomb;
  tomb.version = version;
  tomb.tombstone = true;
  map_[std::string(key)] = tomb;
  return tomb;
}

bool DhtItems::Apply(std::string_view key, DhtEntry entry, bool from_primary) {
  if (entry.tombstone) entry.value.clear();
  auto [it, inserted] = map_.try_emplace(std::string(key));
  if (!inserted) {
    const DhtEntry& held = it->second;
    bool newer = entry.version > held.version;
    bool overrides = from_primary && entry.version == held.version && !(entry == held);
    if (!newer && !overrides) return false;
  }
  it->second = std::move(entry);
  return true;
}

size_t DhtItems::live(uint64_t now_ns) const {
  size_t n = 0;
  for (const auto& [key, entry] : map_) n += !entry.tombstone && !Expired(entry, now_ns);
  return n;
}

namespace dht_wire {
namespace {
constexpr size_t kWriteHeader = 1 + 4 + 4 + 8 + 2;
constexpr size_t kReplicateHeader = 8 + 1 + 4 + 8 + 2;
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
  Put<uint32_t>(out, w.flags);
  Put<uint32_t>(out, w.ttl_s);
  Put<uint64_t>(out, w.cas);
  Put<uint16_t>(out, uint16_t(w.key.size()));
  PutBytes(out, w.key);
  PutBytes(out, w.value);
  return out;
}

Result<DhtWrite> DecodeWrite(const uint8_t* data, size_t length) {
  if (length < kWriteHeader) return Error::kInvalidArgument;
  DhtWrite w;
  uint8_t mode = data[0];
  if (mode > uint8_t(DhtWrite::Mode::kCas)) return Error::kInvalidArgument;
  w.mode = DhtWrite::Mode(mode);
  w.flags = Load32(data + 1);
  w.ttl_s = Load32(data + 5);
  w.cas = Load64(data + 9);
  size_t key_length = Load16(data + 17);
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
  Put<uint16_t>(out, uint16_t(key.size()));
  PutBytes(out, key);
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
  size_t key_length = Load16(data + 21);
  if (key_length == 0 || key_length > kDhtMaxKey || key_length > length - kReplicateHeader) {
    return Error::kInvalidArgument;
  }
  size_t value_length = length - kReplicateHeader - key_length;
  if (value_length > kDhtMaxValue || (r.entry.tombstone && value_length != 0)) return Error::kInvalidArgument;
  r.key = Str(data + kReplicateHeader, key_length);
  r.entry.value = Str(data + kReplicateHeader + key_length, value_length);
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

}  // namespace dht_wire
}  // namespace fox::ebb
