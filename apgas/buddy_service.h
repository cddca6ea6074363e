// Internal: BuddyStore's state at one place and its requests (buddy_store.h),
// a shared Ebb at kBuddyStoreId: the masters of this place's values, the
// backups it holds of other places' values, and the Rpc server for both.
//
// The messages are buddy_wire.h's.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "buddy_wire.h"
#include "fox/apgas/buddy_store.h"
#include "fox/ebb/ebb_ref.h"
#include "fox/ebb/shared_ebb.h"
#include "fox/ebb/static_ids.h"
#include "fox/net/ids.h"
#include "fox/spinlock.h"

namespace fox::apgas::detail {

class BuddyService : public ebb::SharedEbb<BuddyService> {
 public:
  static ebb::EbbRef<BuddyService> Get() { return ebb::EbbRef<BuddyService>(ebb::kBuddyStoreId); }
  BuddyService();  // listens on the calling core; before am::Start
  ~BuddyService();

  enum Handler : uint16_t { kBackup = 1, kRead = 2, kForget = 3, kPart = 4 };

  // A number for this place's next write.
  uint64_t NextSeq();
  // A fresh id for a write sent in parts.
  uint64_t NextWriteId();
  // The masters: the values of `message`'s `spans` (from its body at
  // `body`); each replaces an older one only.
  void PutMasters(const std::string& store, const Shared& message, size_t body, const std::vector<BuddySpan>& spans);
  // Records that `buddy` holds the backups of `keys` (written as `seq`);
  // returns the keys whose backup was at another place before, by place.
  std::map<uint32_t, std::vector<std::string>> SetBuddy(const std::string& store, const std::vector<std::string>& keys,
                                                        uint64_t seq, uint32_t buddy);
  std::optional<Value> Master(const std::string& store, const std::string& key) const;
  std::optional<Value> Backup(const std::string& store, uint32_t owner, const std::string& key) const;
  // After `dead` died: this place's masters it held the backups of, and the
  // backups of its values held here, as writes to send (the hook's work),
  // with their store and owner; and its unfinished parts dropped.
  struct Held {
    std::string store;
    uint32_t owner;
    std::vector<std::pair<std::string, Value>> values;
  };
  std::vector<Held> MastersBackedUpAt(uint32_t dead) const;
  std::vector<Held> BackupsOf(uint32_t dead) const;
  void DropParts(uint32_t dead);

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
  struct Parts {  // a write arriving in parts
    std::vector<uint8_t> body;
    uint64_t length = 0;
  };
  void Serve(NodeId from, HandlerId handler, std::vector<uint8_t> message);
  void ApplyBackup(HandlerId handler, const Shared& message, size_t body);
  // A part of a write; the whole body once the last part is in.
  std::optional<std::vector<uint8_t>> AddPart(NodeId from, const uint8_t* data, size_t length);
  void AnswerRead(NodeId from, uint64_t id, const uint8_t* data, size_t length);

  mutable SpinLock lock_;
  uint64_t next_seq_ GUARDED_BY(lock_) = 1;
  uint64_t next_write_ GUARDED_BY(lock_) = 1;
  std::map<std::pair<std::string, std::string>, Master_> masters_ GUARDED_BY(lock_);           // store, key
  std::map<std::tuple<std::string, uint32_t, std::string>, Value> backups_ GUARDED_BY(lock_);  // store, owner, key
  std::map<std::pair<NodeId, uint64_t>, Parts> parts_ GUARDED_BY(lock_);                       // sender, write id
  BuddyStore::Stats stats_ GUARDED_BY(lock_);
};

}  // namespace fox::apgas::detail
