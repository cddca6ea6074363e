// apgas_node steps spares and add_places: PlaceManager (apgas_node.cc says
// what they check).
#include <string>
#include <utility>
#include <vector>

#include "fox/apgas/place_manager.h"
#include "fox/clock.h"
#include "fox/apgas/store.h"

#include "common.h"

namespace apgas_node {

// PlaceManager tests: each active place keeps its slice (its index * 100)
// in the store `name`; a replacement restores the slice of the place it
// replaced (non-shrinking recovery); how many active places hold theirs.
void SetSlices(const std::string& name, const fox::apgas::PlaceGroup& active) {
  fox::apgas::finish([&] {
    for (size_t i = 0; i < active.size(); ++i) {
      fox::apgas::asyncAt(
          active[i],
          [](const std::string& store, uint64_t index) {
            fox::apgas::ResilientStore::Make(store).Set("slice", index * 100);
          },
          name, uint64_t(i));
    }
  });
}

void RestoreSlices(const std::string& name, const std::vector<std::pair<Place, Place>>& replaced) {
  fox::apgas::finish([&] {
    for (auto [dead, fresh] : replaced) {
      fox::apgas::asyncAt(
          fresh,
          [](const std::string& store, Place from) {
            auto s = fox::apgas::ResilientStore::Make(store);
            auto slice = s.GetRemote<uint64_t>(from, "slice");
            if (slice) s.Set("slice", *slice);
          },
          name, dead);
    }
  });
}

size_t RightSlices(const std::string& name, const fox::apgas::PlaceGroup& active) {
  auto store = fox::apgas::ResilientStore::Make(name);
  size_t right = 0;
  for (size_t i = 0; i < active.size(); ++i) {
    auto slice = store.GetRemote<uint64_t>(active[i], "slice");
    right += slice && *slice == i * 100;
  }
  return right;
}

// A job that grows: place 2 dies, the manager asks the frontend for a new
// place (fox run starts one), which takes index 2 and restores its slice.
void AddPlaces() {
  using fox::apgas::PlaceGroup;
  using fox::apgas::PlaceManager;
  CHECK(fox::apgas::places().size() == 4);
  PlaceManager pm(0, false);
  PlaceGroup active = pm.activePlaces();
  SetSlices("grow", active);
  CHECK(KillPlace(2));
  uint64_t t0 = fox::clock::NowNs();
  auto added = pm.addPlaces(1);
  uint64_t ms = (fox::clock::NowNs() - t0) / 1'000'000;
  CHECK(added.size() == 1 && added[0].id >= 4);  // a fresh id, never the dead one's
  auto change = pm.rebuildActivePlaces();
  active = pm.activePlaces();
  CHECK(change.replaced.size() == 1 && change.replaced[0].first == Place{2} && change.replaced[0].second == added[0] &&
        active.size() == 4 && active[2] == added[0]);
  RestoreSlices("grow", change.replaced);
  size_t right = RightSlices("grow", active);
  // Every place knows the new one, and it computes with them.
  uint64_t know = 0;
  for (Place p : active) {
    know += fox::apgas::at(
        p,
        [](uint32_t id) {
          auto all = fox::apgas::places();
          return uint64_t(std::find(all.begin(), all.end(), Place{id}) != all.end());
        },
        added[0].id);
  }
  std::printf(
      "apgas: place manager: place 2 died, addPlaces(1) gave place %u in %llu ms, which took index 2 and restored "
      "its slice from the store: %zu of %zu slices right, %llu of %zu places know it: %s\n",
      added[0].id, (unsigned long long)ms, right, active.size(), (unsigned long long)know, active.size(),
      right == active.size() && know == active.size() ? "PASS" : "FAIL");
  CHECK(right == active.size() && know == active.size());
}

void Spares() {
  using fox::apgas::PlaceGroup;
  using fox::apgas::PlaceManager;
  CHECK(fox::apgas::places().size() == 4);
  PlaceManager pm;  // the job's spares: fox.spares=1 (fox run --spares 1)
  PlaceManager strict(0, false);
  PlaceGroup active = pm.activePlaces();
  CHECK(active.size() == 3 && active[2] == Place{2} && pm.spares().size() == 1 && pm.spares()[0] == Place{3});
  SetSlices("pm", active);
  CHECK(KillPlace(2));
  auto change = pm.rebuildActivePlaces();
  active = pm.activePlaces();
  CHECK(change.removed.size() == 1 && change.removed[0] == Place{2} && change.added.size() == 1 &&
        change.added[0] == Place{3} && change.replaced.size() == 1 && active.size() == 3 && active[2] == Place{3} &&
        pm.spares().empty());
  RestoreSlices("pm", change.replaced);  // non-shrinking recovery
  size_t right = RightSlices("pm", active);
  CHECK(right == active.size());
  bool strict_threw = false;
  try {
    (void)strict.rebuildActivePlaces();
  } catch (const fox::apgas::DeadPlaceException& e) {
    strict_threw = e.place() == Place{2};
  }
  CHECK(strict_threw && strict.activePlaces().size() == 4);  // unchanged
  CHECK(KillPlace(1));
  auto shrink = pm.rebuildActivePlaces();
  active = pm.activePlaces();
  CHECK(shrink.removed.size() == 1 && shrink.removed[0] == Place{1} && shrink.added.empty() && active.size() == 2 &&
        active[0] == Place{0} && active[1] == Place{3});
  bool too_many = false;
  try {
    PlaceManager none(2);  // 2 live places: 2 spares would leave none active
  } catch (const std::invalid_argument&) {
    too_many = true;
  }
  CHECK(too_many);
  std::printf(
      "apgas: place manager: place 2 died, spare 3 took index 2 and restored its slice from the store, %zu of 3 "
      "slices right, a manager that may not shrink threw DeadPlaceException(2), place 1 died and the group shrank "
      "to 0 3: PASS\n",
      right);
}

}  // namespace apgas_node
