// Internal: BuddyStore's state at one place and its requests (buddy_store.h),
// a shared Ebb at kBuddyStoreId: the masters of this place's values, the
// backups it holds of other places' values, and the Rpc server for both.
//
// Requests (Rpc, the body a cereal archive):
//   kBackup  a Write: values of `owner` to keep as backups (each replaces an
//            older backup only); reply empty
//   kRead    a Read: `owner`'s `key`, from its master (backup false) or
//            from a backup held here (true); reply a Found
//   kForget  a Write without values: backups of `owner` no longer kept
//            here (its buddy changed); reply empty
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "fox/apgas/buddy_store.h"
#include "fox/ebb/ebb_ref.h"
#include "fox/ebb/shared_ebb.h"
#include "fox/ebb/static_ids.h"
#include "fox/net/node_id.h"
#include "fox/spinlock.h"

namespace fox::apgas::detail {

using Shared = std::shared_ptr<const std::vector<uint8_t>>;

struct BuddyEntry {
  std::string key;
  uint64_t seq = 0;  // the owner's counter at the write
  std::vector<uint8_t> bytes;
  template <class A>
  void serialize(A& ar) {
    ar(key, seq, bytes);
  }
};
struct BuddyWrite {
  std::string store;
  uint32_t owner = 0;
  std::vector<BuddyEntry> entries;
  template <class A>
  void serialize(A& ar) {
    ar(store, owner, entries);
  }
};
// A Write's bytes from values held elsewhere (the same archive as
// BuddyWrite's: the receiver decodes a BuddyWrite).
struct BuddyEntryRef {
  const std::string& key;
  uint64_t seq;
  const std::vector<uint8_t>& bytes;
  template <class A>
  void serialize(A& ar) {
    ar(key, seq, bytes);
  }
};
struct BuddyWriteRef {
  const std::string& store;
  uint32_t owner;
  const std::vector<BuddyEntryRef>& entries;
  template <class A>
  void serialize(A& ar) {
    ar(store, owner, entries);
  }
};
struct BuddyRead {
  std::string store;
  uint32_t owner = 0;
  std::string key;
  bool backup = false;
  template <class A>
  void serialize(A& ar) {
    ar(store, owner, key, backup);
  }
};
struct BuddyFoundRef {  // a Found's bytes from a value held here
  bool found;
  uint64_t seq;
  const std::vector<uint8_t>& bytes;
  template <class A>
  void serialize(A& ar) {
    ar(found, seq, bytes);
  }
};
struct BuddyFound {
  bool found = false;
  uint64_t seq = 0;
  std::vector<uint8_t> bytes;
  template <class A>
  void serialize(A& ar) {
    ar(found, seq, bytes);
  }
};

class BuddyService : public ebb::SharedEbb<BuddyService> {
 public:
  static ebb::EbbRef<BuddyService> Get() { return ebb::EbbRef<BuddyService>(ebb::kBuddyStoreId); }
  BuddyService();  // listens on the calling core; before am::Start
  ~BuddyService();

  static constexpr uint16_t kBackup = 1, kRead = 2, kForget = 3;

  struct Value {
    uint64_t seq = 0;
    Shared bytes;
  };
  // The masters: takes the values together under one number; returns it.
  uint64_t PutMasters(const std::string& store, const std::vector<std::pair<std::string, Shared>>& values);
  // Records that `buddy` holds the backups of `keys` (written as `seq`);
  // returns the keys whose backup was at another place before, by place.
  std::map<uint32_t, std::vector<std::string>> SetBuddy(const std::string& store, const std::vector<std::string>& keys,
                                                        uint64_t seq, uint32_t buddy);
  std::optional<Value> Master(const std::string& store, const std::string& key) const;
  std::optional<Value> Backup(const std::string& store, uint32_t owner, const std::string& key) const;
  // After `dead` died: this place's masters it held the backups of, and the
  // backups of its values held here, as Writes by store (the hook's work).
  std::vector<BuddyWrite> MastersBackedUpAt(uint32_t dead) const;
  std::vector<BuddyWrite> BackupsOf(uint32_t dead) const;

  BuddyStore::Stats stats() const {
    SpinGuard g(lock_);
    return stats_;
  }
  void Count(uint64_t BuddyStore::Stats::*counter, uint64_t n = 1) {
    SpinGuard g(lock_);
    stats_.*counter += n;
  }

 private:
  struct Master_ {
    Value value;
    std::optional<uint32_t> buddy;  // where its backup is (none yet: alone, or not acknowledged)
  };
  void Serve(NodeId from, uint16_t handler, const uint8_t* data, size_t length);

  mutable SpinLock lock_;
  uint64_t next_seq_ GUARDED_BY(lock_) = 1;
  std::map<std::pair<std::string, std::string>, Master_> masters_ GUARDED_BY(lock_);           // store, key
  std::map<std::tuple<std::string, uint32_t, std::string>, Value> backups_ GUARDED_BY(lock_);  // store, owner, key
  BuddyStore::Stats stats_ GUARDED_BY(lock_);
};

}  // namespace fox::apgas::detail
