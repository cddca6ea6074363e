// PlaceLocal's per-place registry (global.h).
#include "fox/apgas/global.h"

#include <atomic>
#include <mutex>
#include <unordered_map>

namespace fox::apgas::detail {
namespace {
std::mutex g_lock;
std::unordered_map<uint64_t, std::shared_ptr<void>> g_objects;
std::atomic<uint64_t> g_next{1};
}  // namespace

// Unique in the job: the making place's id in the top bits.
uint64_t NewPlaceLocalId() { return uint64_t(here().id) << 40 | g_next.fetch_add(1); }

void SetPlaceLocal(uint64_t id, std::shared_ptr<void> object) {
  std::lock_guard<std::mutex> g(g_lock);
  g_objects[id] = std::move(object);
}

std::shared_ptr<void> GetPlaceLocal(uint64_t id) {
  std::lock_guard<std::mutex> g(g_lock);
  auto it = g_objects.find(id);
  return it == g_objects.end() ? nullptr : it->second;
}

void DropPlaceLocal(uint64_t id) {
  std::shared_ptr<void> gone;
  std::lock_guard<std::mutex> g(g_lock);
  auto it = g_objects.find(id);
  if (it == g_objects.end()) return;
  gone = std::move(it->second);
  g_objects.erase(it);
}

}  // namespace fox::apgas::detail
