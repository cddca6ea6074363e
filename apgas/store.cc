// ResilientStore (store.h) on the job's Dht.
#include "fox/apgas/store.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>

#include "fox/ebb/dht.h"
#include "fox/spinlock.h"
#include "runtime.h"

namespace fox::apgas {
namespace {

constexpr char kPrefix[] = "apgas.store/";

std::string Checked(std::string key) {
  if (key.size() > ebb::kDhtMaxKey) {
    throw std::invalid_argument("apgas: a resilient store key is at most " + std::to_string(ebb::kDhtMaxKey) +
                                " bytes with its prefix: " + key.substr(0, 64) + "...");
  }
  return key;
}
std::string KeyOf(const std::string& store, uint32_t place, const std::string& key) {
  if (key.empty()) throw std::invalid_argument("apgas: an empty resilient store key");
  return Checked(kPrefix + store + "/" + std::to_string(place) + "/" + key);
}
// Set2's transaction logs of a place: a counter of the logs it opened, and
// the logs by number (removed once both writes are done).
std::string LogCounter(const std::string& store, uint32_t place) {
  return Checked(kPrefix + store + "/logs/" + std::to_string(place));
}
std::string LogKey(const std::string& store, uint32_t place, uint64_t n) {
  return Checked(kPrefix + store + "/log/" + std::to_string(place) + "/" + std::to_string(n));
}
// A number at or below every log the place still has open, written every
// kLowEvery logs: recovery scans from there, not from 1.
std::string LogLow(const std::string& store, uint32_t place) {
  return Checked(kPrefix + store + "/logs_low/" + std::to_string(place));
}
constexpr uint64_t kLowEvery = 64;

[[noreturn]] void Fail(const std::string& store, const char* what, const std::string& key, Error error) {
  throw std::runtime_error("apgas: resilient store " + store + ": " + what + " " + key + ": " + ErrorName(error));
}

ebb::Dht* Dht() { return &*ebb::Dht::Get(); }

void Put(const std::string& store, const std::string& key, const std::string& value) {
  if (value.size() > ebb::kDhtMaxValue) {
    throw std::invalid_argument("apgas: resilient store " + store + ": a value of " + std::to_string(value.size()) +
                                " bytes (at most " + std::to_string(ebb::kDhtMaxValue) + ")");
  }
  auto r = Dht()->Set(key, value);
  if (!r.ok()) Fail(store, "set", key, r.error());
}

void Remove(const std::string& store, const std::string& key) {
  auto r = Dht()->Delete(key);
  if (!r.ok() && r.error() != Error::kNotFound) Fail(store, "delete", key, r.error());
}

std::optional<std::string> Fetch(const std::string& store, const std::string& key) {
  auto r = Dht()->Get(key);
  if (r.ok()) return std::move(r->value);
  if (r.error() == Error::kNotFound) return std::nullopt;
  Fail(store, "get", key, r.error());
}

// A stored value is one Dht value: 'V' and the bytes (up to kInline), or
// 'C' and a Head naming its chunks, at keys of their own (ChunkKey) that
// no other write uses: the chunks are written first, then the head (the
// switch to the new value), then the old value's chunks are removed. A
// reader that finds a chunk gone (a later write removed it) reads the head
// again. A writer that dies between leaves unreferenced chunks (garbage,
// never read).
constexpr size_t kInline = ebb::kDhtMaxValue - 1;
constexpr size_t kChunk = ebb::kDhtMaxValue;
// Set's values over this size are chunked even when one Dht value would
// hold them, and their writer keeps a local copy (store.h).
constexpr size_t kLocalMin = 4096;
struct Head {
  uint32_t writer = 0;
  uint64_t serial = 0;  // the writer's, one per chunked write
  uint64_t size = 0;
  uint64_t chunks = 0;
  template <class A>
  void serialize(A& ar) {
    ar(writer, serial, size, chunks);
  }
};
std::atomic<uint64_t> g_serial{0};

std::string ChunkKey(const std::string& store, const Head& h, uint64_t i) {
  return Checked(kPrefix + store + "/chunk/" + std::to_string(h.writer) + "/" + std::to_string(h.serial) + "/" +
                 std::to_string(i));
}
std::string Inline(const std::vector<uint8_t>& bytes) {
  std::string v(1, 'V');
  v.append(bytes.begin(), bytes.end());
  return v;
}
std::optional<Head> HeadOf(const std::optional<std::string>& value) {
  if (!value || value->empty() || (*value)[0] != 'C') return std::nullopt;
  Head h;
  InArchive in(reinterpret_cast<const uint8_t*>(value->data()) + 1, value->size() - 1);
  in(h);
  return h;
}
// The chunked values this place wrote, by Dht key, with their bytes (the
// local copy): the key's next write or delete removes their chunks without
// reading the head back (a place writes only its own keys with Set; Set2's
// values are inline), and a read whose head is this one is answered here.
struct Written {
  Head head;
  std::shared_ptr<const std::vector<uint8_t>> bytes;
};
std::mutex g_chunked_lock;
std::map<std::string, Written> g_chunked;  // guarded by g_chunked_lock
std::atomic<uint64_t> g_local_reads{0}, g_local_bytes{0}, g_remote_reads{0}, g_remote_bytes{0};

std::optional<Head> ForgetChunked(const std::string& key) {
  std::lock_guard<std::mutex> g(g_chunked_lock);
  auto it = g_chunked.find(key);
  if (it == g_chunked.end()) return std::nullopt;
  Head h = it->second.head;
  g_chunked.erase(it);
  return h;
}

void RememberChunked(const std::string& key, const Head& h, std::shared_ptr<const std::vector<uint8_t>> bytes) {
  std::lock_guard<std::mutex> g(g_chunked_lock);
  g_chunked[key] = Written{h, std::move(bytes)};
}

// The local copy of the value whose head is h, if this place wrote it.
std::shared_ptr<const std::vector<uint8_t>> LocalCopy(const std::string& key, const Head& h) {
  std::lock_guard<std::mutex> g(g_chunked_lock);
  auto it = g_chunked.find(key);
  if (it == g_chunked.end() || it->second.head.writer != h.writer || it->second.head.serial != h.serial) return nullptr;
  return it->second.bytes;
}

void RemoveChunks(const std::string& store, const std::optional<Head>& h) {
  if (!h) return;
  for (uint64_t i = 0; i < h->chunks; ++i) Remove(store, ChunkKey(store, *h, i));
}

// One Set2: the two Dht keys and their values (encoded, inline).
struct Log {
  std::string key, value, key2, value2;
  template <class A>
  void serialize(A& ar) {
    ar(key, value, key2, value2);
  }
};

// The stores this place knows, for the death hook, and per store the logs
// this place has open.
SpinLock g_lock;
std::set<std::string> g_stores GUARDED_BY(g_lock);
std::map<std::string, std::set<uint64_t>> g_open GUARDED_BY(g_lock);
bool g_hooked GUARDED_BY(g_lock) = false;

}  // namespace

ResilientStore ResilientStore::Make(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos) {
    throw std::invalid_argument("apgas: a resilient store's name is not empty and has no '/': " + name);
  }
  bool hook;
  {
    SpinGuard g(g_lock);
    g_stores.insert(name);
    hook = !g_hooked;
    g_hooked = true;
  }
  if (hook) {
    detail::Runtime::Get()->AddDeathHook([](uint32_t dead) {
      std::vector<std::string> stores;
      {
        SpinGuard g(g_lock);
        stores.assign(g_stores.begin(), g_stores.end());
      }
      for (const std::string& s : stores) {
        try {
          (void)Recover(s, dead);
        } catch (const std::exception& e) {  // a hook must not throw: say so, the finish goes on
          std::printf("apgas: resilient store %s: the logs of dead place %u: %s\n", s.c_str(), dead, e.what());
        }
      }
    });
  }
  // Places that died before this place knew the store: their logs too.
  for (Place p : places()) {
    if (isDead(p)) (void)Recover(name, p.id);
  }
  return ResilientStore(name);
}

void ResilientStore::SetBytes(Place place, const std::string& key, std::vector<uint8_t> bytes) {
  std::string dht_key = KeyOf(name_, place.id, key);
  std::optional<Head> old = ForgetChunked(dht_key);
  if (bytes.size() <= kLocalMin) {
    Put(name_, dht_key, Inline(bytes));
  } else {
    Head h{here().id, g_serial.fetch_add(1) + 1, bytes.size(), (bytes.size() + kChunk - 1) / kChunk};
    for (uint64_t i = 0; i < h.chunks; ++i) {
      size_t at = size_t(i) * kChunk, n = std::min(kChunk, bytes.size() - at);
      Put(name_, ChunkKey(name_, h, i), std::string(reinterpret_cast<const char*>(bytes.data()) + at, n));
    }
    std::vector<uint8_t> head;
    {
      OutArchive out(head);
      out(h);
    }
    std::string value(1, 'C');
    value.append(head.begin(), head.end());
    Put(name_, dht_key, value);
    RememberChunked(dht_key, h, std::make_shared<const std::vector<uint8_t>>(std::move(bytes)));
  }
  RemoveChunks(name_, old);
}

std::optional<std::vector<uint8_t>> ResilientStore::GetBytes(Place place, const std::string& key) {
  std::string dht_key = KeyOf(name_, place.id, key);
  for (int attempt = 0; attempt < 8; ++attempt) {
    auto value = Fetch(name_, dht_key);
    if (!value) return std::nullopt;
    if (value->empty() || ((*value)[0] != 'V' && (*value)[0] != 'C')) {
      throw std::runtime_error("apgas: resilient store " + name_ + ": " + dht_key + " holds no store value");
    }
    if ((*value)[0] == 'V') return std::vector<uint8_t>(value->begin() + 1, value->end());
    Head h = *HeadOf(value);
    if (h.writer == here().id) {
      if (auto local = LocalCopy(dht_key, h)) {
        g_local_reads.fetch_add(1, std::memory_order_relaxed);
        g_local_bytes.fetch_add(local->size(), std::memory_order_relaxed);
        return *local;
      }
    }
    std::vector<uint8_t> bytes;
    bytes.reserve(h.size);
    bool whole = true;
    for (uint64_t i = 0; i < h.chunks && whole; ++i) {
      auto chunk = Fetch(name_, ChunkKey(name_, h, i));
      if (!chunk) whole = false;  // a later write replaced the value: read its head
      if (chunk) bytes.insert(bytes.end(), chunk->begin(), chunk->end());
    }
    if (whole && bytes.size() == h.size) {
      g_remote_reads.fetch_add(1, std::memory_order_relaxed);
      g_remote_bytes.fetch_add(bytes.size(), std::memory_order_relaxed);
      return bytes;
    }
    if (whole)
      throw std::runtime_error("apgas: resilient store " + name_ + ": " + dht_key + " has chunks of the wrong size");
  }
  throw std::runtime_error("apgas: resilient store " + name_ + ": " + dht_key + " changed under 8 reads in a row");
}

ResilientStore::Reads ResilientStore::ChunkedReads() {
  return Reads{g_local_reads.load(), g_local_bytes.load(), g_remote_reads.load(), g_remote_bytes.load()};
}

void ResilientStore::Delete(const std::string& key) {
  std::string dht_key = KeyOf(name_, here().id, key);
  std::optional<Head> old = ForgetChunked(dht_key);
  Remove(name_, dht_key);
  RemoveChunks(name_, old);
}

void ResilientStore::Set2Bytes(const std::string& key, std::vector<uint8_t> value, Place place, const std::string& key2,
                               std::vector<uint8_t> value2, int steps) {
  if (value.size() > kInline || value2.size() > kInline) {
    throw std::invalid_argument("apgas: resilient store " + name_ + ": Set2 of values over " + std::to_string(kInline) +
                                " bytes");
  }
  Log log{KeyOf(name_, here().id, key), Inline(value), KeyOf(name_, place.id, key2), Inline(value2)};
  uint32_t self = here().id;
  auto n = Dht()->Add(LogCounter(name_, self), 1);
  if (!n.ok()) Fail(name_, "open a log at", LogCounter(name_, self), n.error());
  uint64_t low = 0;
  {
    SpinGuard g(g_lock);
    auto& open = g_open[name_];
    open.insert(*n);
    if (*n % kLowEvery == 0) low = *open.begin();
  }
  if (low != 0) Put(name_, LogLow(name_, self), std::to_string(low));
  struct Close {  // however this ends (a failed call throws)
    const std::string& name;
    uint64_t n;
    ~Close() {
      SpinGuard g(g_lock);
      g_open[name].erase(n);
    }
  } close{name_, *n};
  if (steps < 2) return;
  std::string log_key = LogKey(name_, self, *n);
  std::vector<uint8_t> bytes;
  {
    OutArchive out(bytes);
    out(log);
  }
  Put(name_, log_key, std::string(bytes.begin(), bytes.end()));
  if (steps < 3) return;
  Put(name_, log.key, log.value);
  if (steps < 4) return;
  Put(name_, log.key2, log.value2);
  if (steps < 5) return;
  Remove(name_, log_key);
}

size_t ResilientStore::Recover(const std::string& name, uint32_t dead) {
  auto count = Fetch(name, LogCounter(name, dead));
  uint64_t opened = 0;
  if (!count || !ebb::DhtParseCounter(*count, &opened)) return 0;
  uint64_t low = 1;
  if (auto mark = Fetch(name, LogLow(name, dead)); !mark || !ebb::DhtParseCounter(*mark, &low) || low == 0) low = 1;
  size_t completed = 0;
  for (uint64_t n = low; n <= opened; ++n) {
    std::string log_key = LogKey(name, dead, n);
    auto bytes = Fetch(name, log_key);
    if (!bytes) continue;  // done (removed), or never written
    Log log;
    InArchive in(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size());
    in(log);
    Put(name, log.key, log.value);
    Put(name, log.key2, log.value2);
    Remove(name, log_key);
    ++completed;
  }
  return completed;
}

}  // namespace fox::apgas
