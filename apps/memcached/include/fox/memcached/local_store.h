// LocalStore: the Store of one process's memory (std::unordered_map), for the
// unit tests, the fuzzer and the stock-client conformance server. Lazy expiry
// (an expired item is erased when it is next touched), flush_all with a delay,
// one cas counter. No eviction: past max_bytes a store fails with kNoMemory.
// Not thread-safe: one caller at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "fox/memcached/store.h"

namespace fox::memcached {

class LocalStore final : public Store {
 public:
  struct Options {
    size_t max_value_bytes = 1 << 20;  // as the session's limit (append/prepend/incr results)
    size_t max_bytes = 64 << 20;       // keys + values of live items
  };
  LocalStore() : LocalStore(Options{}) {}
  explicit LocalStore(const Options& options) : options_(options) {}

  Status Get(std::string_view key, Time now, Item* item) override;
  Status Touch(std::string_view key, Expiry expiry, Time now, Item* item) override;
  Status Put(const Mutation& m, Time now, uint64_t* new_cas) override;
  Status Delete(std::string_view key, bool check_cas, uint64_t cas, Time now) override;
  Status Apply(const Arithmetic& a, Time now, uint64_t* value, uint64_t* new_cas) override;
  void Flush(Time when, Time now) override;
  StoreStats Stats(Time now) override;

 private:
  struct Entry {
    std::string value;
    uint32_t flags = 0;
    uint64_t cas = 0;
    Expiry expiry = kNeverExpires;
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Map = std::unordered_map<std::string, Entry, Hash, std::equal_to<>>;

  // Applies a due delayed flush, then finds a live item (erasing it if expired).
  Map::iterator Find(std::string_view key, Time now);
  void Erase(Map::iterator it);
  // Replaces (or inserts) key's entry if memory allows.
  Status Write(std::string_view key, Map::iterator it, std::string value, uint32_t flags, Expiry expiry,
               uint64_t* new_cas);

  Options options_;
  Map items_;
  uint64_t next_cas_ = 1;
  uint64_t bytes_ = 0;
  uint64_t total_items_ = 0;
  Time pending_flush_ = 0;  // 0: none
};

}  // namespace fox::memcached
