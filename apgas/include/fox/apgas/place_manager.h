// PlaceManager: the places a resilient program computes on, and spares to
// replace the ones that die (Resilient X10's PlaceManager; issue 12).
//
//   PlaceManager pm(1);                       // the job's places: all active but the last, a spare
//   PlaceGroup active = pm.activePlaces();    // place 0 first; an index per place
//   ... a finish over `active` throws DeadPlaceException for place p ...
//   auto change = pm.rebuildActivePlaces();   // p's index now holds a spare (non-shrinking
//                                             // recovery), or p is gone (shrinking)
//   for (Place q : change.added) ...          // restore q's state, e.g. from the ResilientStore
//                                             // (GetRemote of the place it replaces)
//
// Non-shrinking recovery keeps indices: a spare takes the dead place's
// index, so data partitioned by index keeps its layout (change.replaced
// pairs each dead place with its replacement). Without spares the group
// shrinks (the dead places removed, the others keep their order), unless
// the manager was made with allow_shrinking = false: then rebuild throws
// DeadPlaceException naming a dead place it cannot replace. Place 0 (the
// program's root) is never a spare; its death ends the job.
//
// A value at the place that made it (place 0, usually): pass the
// PlaceGroup to activities, not the manager. Not thread-safe.
#pragma once

#include <utility>
#include <vector>

#include "fox/apgas/apgas.h"

namespace fox::apgas {

class PlaceManager {
 public:
  // The job's live places in id order: the last `spares` of them are
  // spares, the others active. std::invalid_argument when spares would
  // take place 0 (spares >= live places). By default the job's spares:
  // fox.spares (fox run --spares S), else none.
  explicit PlaceManager(size_t spares = JobSpares(), bool allow_shrinking = true);
  static size_t JobSpares();

  PlaceGroup activePlaces() const { return PlaceGroup(active_); }
  const std::vector<Place>& spares() const { return spares_; }  // live ones not in use yet

  struct Change {
    std::vector<Place> added;                       // spares that joined the active group
    std::vector<Place> removed;                     // dead places taken out
    std::vector<std::pair<Place, Place>> replaced;  // (dead, its replacement), at the dead one's index
  };
  // Takes the dead places out of the active group, replacing each with a
  // live spare at its index while there are any; dead spares are dropped.
  Change rebuildActivePlaces();
  // Asks the frontend for `n` new places (new nodes, or new processes with
  // fox run --hosted; fresh ids, never a dead one's) and adds them to the
  // spares once they have joined (their Dht too), so that the next
  // rebuildActivePlaces can use them. Returns them (fewer if not all came
  // within timeout_ms). Place 0 only; std::runtime_error when the job was
  // not started by fox run (nobody to ask).
  std::vector<Place> addPlaces(size_t n, uint64_t timeout_ms = 120'000);

 private:
  std::vector<Place> active_;
  std::vector<Place> spares_;
  bool allow_shrinking_;
};

}  // namespace fox::apgas
