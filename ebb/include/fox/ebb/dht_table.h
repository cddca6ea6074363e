// The map under DhtItems (dht_items.h): key -> DhtEntry, changed by one
// owner and readable by any core at the same time, without a lock.
//
// Every entry lives in an immutable Item; the owner's change builds a new
// Item and publishes it with one release store into the key's slot (open
// addressing, linear probing: a slot is its key's hash and its Item), then
// retires what it replaced. A reader follows acquire loads from the slot
// array to the Item and sees either the old Item or the new one, never a
// half-written one: a read from another core is as linearizable as the
// owner's own. A removed key's slot keeps a marker (probes go on past it;
// an insert reuses it). Growing (or sweeping out the markers) builds a new
// slot array over the same Items and publishes it; the old array is never
// written again, so a reader still on it sees the table as it was when it
// was replaced, a state it had during that read.
//
// Retiring. What a reader may still hold (an Item, an old slot array) goes
// to `retire(object, free)`, which must call free(object) only once no
// reader can hold it: ebb::RetireLater, with each read in an ebb::SharedRead
// (lifetime.h; a reader's pointer is good until its SharedRead ends).
// Without one (the default), things are freed at once, and only the owner
// may read.
//
// The owner's pointers (Find, ForEach) are good until its next change.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fox/ebb/dht_entry.h"

namespace fox::ebb {

class DhtTable {
 public:
  using Retire = void (*)(void* object, void (*free)(void*));
  struct Item {
    std::string key;
    DhtEntry entry;
  };
  // What a Put replaced.
  struct Replaced {
    bool existed = false;
    bool tombstone = false;
    size_t value_bytes = 0;
  };

  DhtTable() = default;
  ~DhtTable();
  DhtTable(const DhtTable&) = delete;
  DhtTable& operator=(const DhtTable&) = delete;
  // The owner's; no reader may be on either table.
  DhtTable(DhtTable&& other) noexcept;
  DhtTable& operator=(DhtTable&& other) noexcept;

  // Before the first change.
  void set_retire(Retire retire) { retire_ = retire; }

  // The entry for `key`, or null. Any core, within an ebb::SharedRead
  // (with `retire` set); no lock, no allocation.
  const DhtEntry* Find(std::string_view key) const;
  // Owner: stores `entry` for `key`, retiring what it replaces. Allocates.
  Replaced Put(std::string_view key, DhtEntry entry);
  // Owner: forgets `key`; false if absent.
  bool Erase(std::string_view key);
  // Owner: every key and entry, in no order; `fn(const std::string&, const
  // DhtEntry&)` must not change the table.
  template <class F>
  void ForEach(F&& fn) const {
    const Slots* t = slots_.load(std::memory_order_relaxed);
    if (t == nullptr) return;
    for (size_t i = 0; i < t->count; ++i) {
      const Item* item = t->slot[i].item.load(std::memory_order_relaxed);
      if (item != nullptr && item != Removed()) fn(item->key, item->entry);
    }
  }
  size_t size() const { return size_; }

 private:
  struct Slot {
    std::atomic<uint64_t> hash;
    std::atomic<Item*> item;  // null: never used; Removed(): a key was erased here
  };
  struct Slots {
    size_t count;  // a power of two
    Slot* slot;
  };
  static Item* Removed() { return reinterpret_cast<Item*>(alignof(Item)); }
  static uint64_t Hash(std::string_view key);
  // The slot holding `key` in `t` and (`*item`) the Item it held when
  // looked at, else null. Readers and owner.
  static Slot* Lookup(const Slots* t, std::string_view key, uint64_t hash, Item** item);
  // The first slot from `hash` on that is unused or a removed key's (owner).
  static Slot& FreeSlot(const Slots* t, uint64_t hash);
  static void FreeItem(void* item);
  static void FreeSlots(void* slots);
  void Dispose(void* object, void (*free)(void*)) const;
  // A new slot array of `count` for the Items held, published.
  void Rebuild(size_t count);
  void Clear();  // frees everything at once (no readers)

  std::atomic<Slots*> slots_{nullptr};
  size_t size_ = 0;     // keys held
  size_t removed_ = 0;  // Removed() markers in the array
  Retire retire_ = nullptr;
};

}  // namespace fox::ebb
