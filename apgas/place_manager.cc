// PlaceManager (place_manager.h).
#include "fox/apgas/place_manager.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "fox/boot_args.h"
#include "runtime.h"

namespace fox::apgas {

PlaceManager::PlaceManager(size_t spares, bool allow_shrinking) : allow_shrinking_(allow_shrinking) {
  std::vector<Place> live;
  for (Place p : places()) {
    if (!isDead(p)) live.push_back(p);
  }
  if (spares >= live.size()) {
    throw std::invalid_argument("apgas: " + std::to_string(spares) + " spares of " + std::to_string(live.size()) +
                                " live places would leave none active (place 0 is never a spare)");
  }
  active_.assign(live.begin(), live.end() - long(spares));
  spares_.assign(live.end() - long(spares), live.end());
}

size_t PlaceManager::JobSpares() { return size_t(BootArgNumber("fox.spares", 0)); }

std::vector<Place> PlaceManager::addPlaces(size_t n, uint64_t timeout_ms) {
  std::vector<Place> added = detail::Runtime::Get()->AddPlaces(n, timeout_ms);
  spares_.insert(spares_.end(), added.begin(), added.end());
  return added;
}

PlaceManager::Change PlaceManager::rebuildActivePlaces() {
  Change change;
  spares_.erase(std::remove_if(spares_.begin(), spares_.end(), [](Place p) { return isDead(p); }), spares_.end());
  if (!allow_shrinking_) {  // all or nothing: the group still names the dead if it cannot be whole
    size_t dead = size_t(std::count_if(active_.begin(), active_.end(), [](Place p) { return isDead(p); }));
    if (dead > spares_.size()) {
      for (Place p : active_) {
        if (isDead(p)) throw DeadPlaceException(p);
      }
    }
  }
  std::vector<Place> next;
  for (Place p : active_) {
    if (!isDead(p)) {
      next.push_back(p);
      continue;
    }
    change.removed.push_back(p);
    if (!spares_.empty()) {
      Place spare = spares_.front();
      spares_.erase(spares_.begin());
      next.push_back(spare);
      change.added.push_back(spare);
      change.replaced.emplace_back(p, spare);
    }
  }
  active_ = std::move(next);
  return change;
}

}  // namespace fox::apgas
