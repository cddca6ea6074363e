// The Dht's map readable by any core while its owner changes it
// (dht_table.h).
#include "fox/ebb/dht_table.h"

#include <functional>
#include <utility>

namespace fox::ebb {

namespace {
constexpr size_t kFirstSlots = 32;
}  // namespace

uint64_t DhtTable::Hash(std::string_view key) { return std::hash<std::string_view>{}(key); }

void DhtTable::FreeItem(void* item) { delete static_cast<Item*>(item); }
void DhtTable::FreeSlots(void* slots) {
  auto* t = static_cast<Slots*>(slots);
  delete[] t->slot;
  delete t;
}

void DhtTable::Dispose(void* object, void (*free)(void*)) const {
  if (retire_ != nullptr) {
    retire_(object, free);
  } else {
    free(object);
  }
}

DhtTable::~DhtTable() { Clear(); }

DhtTable::DhtTable(DhtTable&& other) noexcept
    : slots_(other.slots_.exchange(nullptr, std::memory_order_relaxed)),
      size_(std::exchange(other.size_, 0)),
      removed_(std::exchange(other.removed_, 0)),
      retire_(other.retire_) {}

DhtTable& DhtTable::operator=(DhtTable&& other) noexcept {
  if (this != &other) {
    Clear();
    slots_.store(other.slots_.exchange(nullptr, std::memory_order_relaxed), std::memory_order_relaxed);
    size_ = std::exchange(other.size_, 0);
    removed_ = std::exchange(other.removed_, 0);
    retire_ = other.retire_;
  }
  return *this;
}

void DhtTable::Clear() {
  Slots* t = slots_.exchange(nullptr, std::memory_order_relaxed);
  if (t == nullptr) return;
  for (size_t i = 0; i < t->count; ++i) {
    Item* item = t->slot[i].item.load(std::memory_order_relaxed);
    if (item != Removed()) delete item;
  }
  FreeSlots(t);
  size_ = removed_ = 0;
}

const DhtEntry* DhtTable::Find(std::string_view key) const {
  const Slots* t = slots_.load(std::memory_order_acquire);
  Item* item = nullptr;
  return t != nullptr && Lookup(t, key, Hash(key), &item) != nullptr ? &item->entry : nullptr;
}

DhtTable::Slot* DhtTable::Lookup(const Slots* t, std::string_view key, uint64_t hash, Item** item) {
  size_t mask = t->count - 1;
  // At most half the slots are in use (keys and markers): a probe ends.
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    Slot& slot = t->slot[i];
    Item* at = slot.item.load(std::memory_order_acquire);
    if (at == nullptr) return nullptr;
    // The hash is stored before the Item is published.
    if (at != Removed() && slot.hash.load(std::memory_order_relaxed) == hash && at->key == key) {
      *item = at;
      return &slot;
    }
  }
}

DhtTable::Slot& DhtTable::FreeSlot(const Slots* t, uint64_t hash) {
  size_t mask = t->count - 1;
  size_t i = hash & mask;
  for (Item* at; (at = t->slot[i].item.load(std::memory_order_relaxed)) != nullptr && at != Removed();) {
    i = (i + 1) & mask;
  }
  return t->slot[i];
}

DhtTable::Replaced DhtTable::Put(std::string_view key, DhtEntry entry) {
  Slots* t = slots_.load(std::memory_order_relaxed);
  if (t == nullptr) {
    Rebuild(kFirstSlots);
    t = slots_.load(std::memory_order_relaxed);
  }
  uint64_t hash = Hash(key);
  Item* old = nullptr;
  if (Slot* slot = Lookup(t, key, hash, &old)) {
    Replaced replaced{true, old->entry.tombstone, old->entry.value.size()};
    slot->item.store(new Item{old->key, std::move(entry)}, std::memory_order_release);
    Dispose(old, FreeItem);
    return replaced;
  }
  auto* item = new Item{std::string(key), std::move(entry)};
  Slot& free = FreeSlot(t, hash);
  if (free.item.load(std::memory_order_relaxed) == Removed()) --removed_;
  free.hash.store(hash, std::memory_order_relaxed);
  free.item.store(item, std::memory_order_release);
  ++size_;
  if (2 * (size_ + removed_) > t->count) Rebuild(4 * size_ > t->count ? 2 * t->count : t->count);
  return {};
}

bool DhtTable::Erase(std::string_view key) {
  Slots* t = slots_.load(std::memory_order_relaxed);
  if (t == nullptr) return false;
  Item* item = nullptr;
  Slot* slot = Lookup(t, key, Hash(key), &item);
  if (slot == nullptr) return false;
  slot->item.store(Removed(), std::memory_order_release);  // a reader on `item` keeps it: retired below
  Dispose(item, FreeItem);
  --size_;
  ++removed_;
  return true;
}

void DhtTable::Rebuild(size_t count) {
  auto* fresh = new Slots{count, new Slot[count]};
  for (size_t i = 0; i < count; ++i) {
    fresh->slot[i].hash.store(0, std::memory_order_relaxed);
    fresh->slot[i].item.store(nullptr, std::memory_order_relaxed);
  }
  Slots* old = slots_.load(std::memory_order_relaxed);
  if (old != nullptr) {
    for (size_t i = 0; i < old->count; ++i) {
      Item* item = old->slot[i].item.load(std::memory_order_relaxed);
      if (item == nullptr || item == Removed()) continue;
      uint64_t hash = old->slot[i].hash.load(std::memory_order_relaxed);
      Slot& free = FreeSlot(fresh, hash);
      free.hash.store(hash, std::memory_order_relaxed);
      free.item.store(item, std::memory_order_relaxed);
    }
  }
  slots_.store(fresh, std::memory_order_release);
  removed_ = 0;
  // Readers still on the old array see it as it was; its Items are the new one's.
  if (old != nullptr) Dispose(old, FreeSlots);
}

}  // namespace fox::ebb
