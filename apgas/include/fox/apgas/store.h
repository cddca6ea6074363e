// ResilientStore: data that outlives the place that wrote it (Resilient
// X10's resilient store; issues 12 and 13), kept in the job's Dht
// (ebb/include/fox/ebb/dht.h): every key on two places, rebuilt on the
// survivors after a death, every write acknowledged by both before it
// returns and applied exactly once.
//
//   auto store = ResilientStore::Make("checkpoint");  // the same name at every place: one store
//   store.Set("x", value);                // this place's x (any value that may cross places)
//   store.Get<T>("x");                     // std::optional<T>: this place's x
//   store.GetRemote<T>(p, "x");            // place p's x, also once p is dead
//   store.Set2("x", v, p, "y", w);         // this place's x and p's y: both or neither
//   store.Delete("x");
//
// Each place has its own keys (as X10's store: a place writes its own,
// reads anyone's); the Dht key is "apgas.store/NAME/PLACE/KEY", at most
// ebb::kDhtMaxKey bytes (longer: std::invalid_argument).
//
// Values of any size: one over 4 KiB is written in chunks of at most a Dht
// value (1 MiB) at keys of their own, then a head naming them at the key
// (the switch: a reader sees the old value or the new one, whole), then
// the old value's chunks are removed. Set2's values are at most a Dht
// value (std::invalid_argument). Measured (hosted.apgas_store_big, 3
// hosted places): a 64 MiB value set at 112 MB/s, read at 230 MB/s.
//
// Local copies (the 2017 report's store: a place restores its own data
// locally, only a dead place's is read remotely): the writer of a chunked
// value keeps its bytes, until the key's next Set or Delete; a read of the
// key at that place fetches the head alone (a small Dht value) and, when it
// names that write, answers from the copy. Any other write (Set2, a dead
// place's Set2 rolled forward) changes the head, so a copy is never read
// stale. ChunkedReads counts the chunked values read from copies and
// from the Dht at this place.
//
// Set2 is atomic across a death: it writes a transaction log first (both
// keys and values), then the two keys, then removes the log (its key stays
// as the Dht's tombstone: the Dht does not collect them yet). Every 64
// logs a place also writes a number at or below every log it has open, so
// that recovery reads the logs from there on only. When a place
// dies, each live place completes that place's logs (rolls them forward)
// before it answers any finish's flush for the death (Runtime's death
// hooks), after the Dht refused or finished every write of the dead place
// (Dht::Quiesce).
//
// Happens-before invariance: an update made by an activity of a place that
// dies either happened before the finish that governs the activity returns
// or never happens: the finish returns only after every live place declared
// the place dead (its later messages are dropped), its Dht writes in
// progress ended (acknowledged, or refused without effect) and its Set2
// logs were completed.
//
// Errors: a Dht call that fails (no answer in time, the ring without
// members) throws std::runtime_error naming the key; a value that does not
// decode as T throws cereal::Exception. Event context inside an activity;
// calls block the calling activity.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fox/apgas/apgas.h"
#include "fox/apgas/serialization.h"

namespace fox::apgas {

class ResilientStore {
 public:
  // The store called `name` (the same at every place). Any place, any time.
  static ResilientStore Make(const std::string& name);

  template <class T>
  void Set(const std::string& key, const T& value) {
    SetBytes(here(), key, Bytes(value));
  }
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
  template <class T, class U>
  void Set2(const std::string& key, const T& value, Place place, const std::string& key2, const U& value2) {
    Set2Bytes(key, Bytes(value), place, key2, Bytes(value2));
  }
  void Delete(const std::string& key);
  // Fault injection for tests: only the first `steps` steps of Set2 (1: log
  // opened, 2: log written, 3: the first key written, 4: the second), as a
  // place that dies in the middle leaves them.
  template <class T, class U>
  void Set2Partial(int steps, const std::string& key, const T& value, Place place, const std::string& key2,
                   const U& value2) {
    Set2Bytes(key, Bytes(value), place, key2, Bytes(value2), steps);
  }

  const std::string& name() const { return name_; }

  // Chunked values read at this place (all stores): from its local copies,
  // and from the Dht (another place's, or a copy no longer current).
  struct Reads {
    uint64_t local = 0, local_bytes = 0, remote = 0, remote_bytes = 0;
  };
  static Reads ChunkedReads();

  // Completes the Set2 logs of a dead place (its death hook; idempotent).
  // Returns how many it completed.
  static size_t Recover(const std::string& name, uint32_t dead);

 private:
  explicit ResilientStore(std::string name) : name_(std::move(name)) {}
  template <class T>
  static std::vector<uint8_t> Bytes(const T& value) {
    return detail::Packed(value);
  }
  void SetBytes(Place place, const std::string& key, std::vector<uint8_t> bytes);
  std::optional<std::vector<uint8_t>> GetBytes(Place place, const std::string& key);
  void Set2Bytes(const std::string& key, std::vector<uint8_t> value, Place place, const std::string& key2,
                 std::vector<uint8_t> value2, int steps = 5);

  std::string name_;
};

}  // namespace fox::apgas
