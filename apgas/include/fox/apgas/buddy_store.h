// BuddyStore: the 2017 report's resilient store for checkpoints. Each
// place's values are kept at the place (its master copy) and at one other
// live place, its buddy (the next live place in the job's order, wrapping
// around), so that a survivor restores its own data locally and only a
// dead place's data is read from another place.
//
//   auto store = BuddyStore::Make("ckpt");        // the same name at every place
//   store.Set("x", value);                        // this place's x
//   BuddyStore::Write w;                          // several values, both or neither at any reader
//   w.Put("a", a);
//   w.Put("b", b);
//   store.Commit(std::move(w));
//   store.Get<T>("x");                            // this place's x: its master copy
//   store.GetRemote<T>(p, "x");                   // p's x: p's master, or once p is dead its backup
//
// Set and Commit return once the master holds the values and the buddy
// acknowledged its backup (a buddy that dies meanwhile is replaced by the
// next live place; a place alone keeps the master only). A Write is a
// local multi-key transaction: the master takes its values together, the
// backup arrives whole (in one message, or in parts the buddy assembles
// before it applies any), so any reader sees all of them or none. Every
// value carries a number from its place's counter, and a backup replaces
// only an older one, so a late backup never undoes a newer write.
//
// Copies: Put serializes a value straight into the message that carries it
// to the buddy; the master keeps that message's bytes, and between hosted
// places the buddy reads them out of this place's memory into the buffer
// it keeps (fox/ebb/messenger.h). A local read decodes from the master.
//
// Failures: when a place dies, before any finish's flush for the death
// (a death hook), each survivor whose buddy it was sends its masters to
// its new buddy, and each survivor that held the dead place's backups
// copies them to its own buddy: the dead place's values and everyone's
// stay on two live places, so a second death after that loses nothing.
// A dead place's value is read from the live place that holds its newest
// backup (every live place is asked which it holds). Two deaths before the
// hooks ran (a place and its buddy at once) lose that place's values:
// GetRemote returns nullopt.
//
// Values are of any size (a write longer than one message, 64 MiB, goes
// in parts of kPartBytes, and so does a read of a longer value); keys are
// any non-empty string (put twice in a Write, the later value counts). Errors:
// a buddy or owner that does not answer in time throws std::runtime_error
// naming the store; a value that does not decode as T throws
// cereal::Exception. Event context inside an activity; calls block the
// calling activity.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fox/apgas/apgas.h"
#include "fox/apgas/serialization.h"
#include "fox/function.h"

namespace fox::apgas {
namespace detail {
// A value in a write's message: its key, its number, and where its bytes
// are (from the start of the message's body).
struct BuddySpan {
  std::string key;
  uint64_t seq = 0, offset = 0, size = 0;
  template <class A>
  void serialize(A& ar) {
    ar(key, seq, offset, size);
  }
};
struct BuddyWrites;
}  // namespace detail

class BuddyStore {
 public:
  using Bytes = std::vector<uint8_t>;
  // A write or a read travels in parts of at most this many bytes.
  static constexpr size_t kPartBytes = size_t(32) << 20;

  // Values to write together (Commit), each packed as it is put.
  class Write {
   public:
    Write();
    // `value` under `key` (not empty; put again, the later value counts):
    // a value cereal serializes or a trivially copyable one, as at.
    template <class T>
    void Put(const std::string& key, const T& value) {
      size_t begin = Begin(key);
      OutArchive out(bytes_);
      detail::Save(out, value);
      spans_.back().size = bytes_.size() - begin;
    }
    size_t size() const { return spans_.size(); }

   private:
    friend class BuddyStore;
    friend struct detail::BuddyWrites;
    size_t Begin(const std::string& key);  // a new span at the end; its first byte's index
    std::vector<uint8_t> bytes_;           // Rpc's request header, then the values
    std::vector<detail::BuddySpan> spans_;
  };

  // The store called `name` (non-empty; the same at every place). Any place.
  static BuddyStore Make(const std::string& name);

  template <class T>
  void Set(const std::string& key, const T& value) {
    Write one;
    one.Put(key, value);
    Commit(std::move(one));
  }
  // This place's values in `write`, all or none at any reader.
  void Commit(Write write);
  template <class T>
  std::optional<T> Get(const std::string& key) {
    return GetRemote<T>(here(), key);
  }
  template <class T>
  std::optional<T> GetRemote(Place place, const std::string& key) {
    std::optional<T> value;
    Read(place, key, [&value](const uint8_t* data, size_t size) {
      InArchive in(data, size);
      detail::Loaded<T> loaded(in);
      value.emplace(std::move(loaded.get()));
    });
    return value;
  }
  // The bytes Put wrote for `place`'s `key`.
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
  // Hands `place`'s `key` to `use` (not at all if there is none).
  void Read(Place place, const std::string& key, Function<void(const uint8_t*, size_t)> use);
  std::string name_;
};

}  // namespace fox::apgas
