// BuddyStore: the 2017 report's resilient store for checkpoints. Each
// place's values are kept at the place (its master copy) and at one other
// live place, its buddy (the next live place in the job's order, wrapping
// around), so that a survivor restores its own data locally and only a
// dead place's data is read from another place.
//
//   auto store = BuddyStore::Make("ckpt");        // the same name at every place
//   store.Set("x", value);                        // this place's x
//   store.SetMany({{"a", store.Pack(a)}, {"b", store.Pack(b)}});  // both or neither, at any reader
//   store.Get<T>("x");                            // this place's x: its master copy
//   store.GetRemote<T>(p, "x");                   // p's x: p's master, or once p is dead its backup
//
// Set returns once the master holds the value and the buddy acknowledged
// its backup (a buddy that dies meanwhile is replaced by the next live
// place; a place alone keeps the master only). SetMany is a local
// multi-key transaction: the master takes the values together, the backup
// arrives in one message and is applied whole, so any reader sees all of
// them or none. Every value carries a number from its place's counter, and
// a backup replaces only an older one, so a late backup never undoes a
// newer write.
//
// Failures: when a place dies, before any finish's flush for the death
// (a death hook), each survivor whose buddy it was sends its masters to
// its new buddy, and each survivor that held the dead place's backups
// copies them to its own buddy: the dead place's values and everyone's
// stay on two live places, so a second death after that loses nothing.
// A dead place's value is read from the live places that hold its backups
// (the newest: every live place is asked, one request each). Two deaths before the hooks ran (a place and its buddy at
// once) lose that place's values: GetRemote returns nullopt.
//
// Values are at most kMaxValueBytes in one Set or SetMany (more:
// std::invalid_argument); keys are any non-empty string. Errors: a buddy
// or owner that does not answer in time throws std::runtime_error naming
// the store; a value that does not decode as T throws cereal::Exception.
// Event context inside an activity; calls block the calling activity.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fox/apgas/apgas.h"
#include "fox/apgas/serialization.h"

namespace fox::apgas {

class BuddyStore {
 public:
  using Bytes = std::vector<uint8_t>;
  static constexpr size_t kMaxValueBytes = size_t(48) << 20;

  // The store called `name` (non-empty; the same at every place). Any place.
  static BuddyStore Make(const std::string& name);

  template <class T>
  static Bytes Pack(const T& value) {
    return detail::Packed(value);
  }
  template <class T>
  void Set(const std::string& key, const T& value) {
    std::vector<std::pair<std::string, Bytes>> one;
    one.emplace_back(key, Pack(value));
    SetMany(std::move(one));
  }
  // This place's keys and their values (Pack), all or none at any reader.
  void SetMany(std::vector<std::pair<std::string, Bytes>> entries);
  template <class T>
  std::optional<T> Get(const std::string& key) {
    return GetRemote<T>(here(), key);
  }
  template <class T>
  std::optional<T> GetRemote(Place place, const std::string& key) {
    auto bytes = GetBytes(place, key);
    if (!bytes) return std::nullopt;
    return detail::Unpack<T>(*bytes);
  }
  std::optional<Bytes> GetBytes(Place place, const std::string& key);

  const std::string& name() const { return name_; }

  // At this place, all stores: values read from masters here (local),
  // from other places' masters (remote), from backups of dead places
  // (backup); values re-replicated after deaths.
  struct Stats {
    uint64_t local_reads = 0, remote_reads = 0, backup_reads = 0, rereplicated = 0;
  };
  static Stats stats();

 private:
  explicit BuddyStore(std::string name) : name_(std::move(name)) {}
  std::string name_;
};

}  // namespace fox::apgas
