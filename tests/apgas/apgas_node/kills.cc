// apgas_node steps random_kill, kill, orphans and home_kill: places that
// die inside finishes (apgas_node.cc says what they check).
#include <string>
#include <vector>

#include "common.h"
#include "fox/clock.h"
#include "fox/net/am.h"

namespace apgas_node {

// At a place that dies once its orphans run: how many said they started.
std::atomic<uint64_t> g_orphans_started{0};

// A binary tree of activities: node `index` at depth `depth` runs at
// places[index % n]; its two children one level down; a leaf sleeps 2 ms
// and sends one back to place 0.
constexpr uint32_t kTreeDepth = 5;
void TreeNode(uint32_t depth, uint64_t index, std::vector<Place> all) {
  if (depth == kTreeDepth) {
    SleepMs(2);
    fox::apgas::asyncAt(Place{0}, [] { Arrive(); });
    return;
  }
  for (uint64_t child = 2 * index + 1; child <= 2 * index + 2; ++child) {
    fox::apgas::asyncAt(
        all[child % all.size()], [](uint32_t d, uint64_t i, std::vector<Place> a) { TreeNode(d, i, std::move(a)); },
        depth + 1, child, all);
  }
}

// How many leaves of a tree round never ran at `victim` on their way from
// the root (TreeNode's placement): those must come back whatever moment it
// dies at.
size_t TreeLeavesAvoiding(uint32_t victim, const std::vector<Place>& all, uint32_t depth = 0, uint64_t index = 0) {
  if (all[index % all.size()].id == victim) return 0;
  if (depth == kTreeDepth) return 1;
  return TreeLeavesAvoiding(victim, all, depth + 1, 2 * index + 1) +
         TreeLeavesAvoiding(victim, all, depth + 1, 2 * index + 2);
}

void RandomKill(uint32_t victim, uint64_t ms, const std::string& shape) {
  bool tree = shape == "tree", nested = shape == "nested";
  auto places = fox::apgas::places();
  size_t n = places.size();
  size_t leaves = tree ? size_t(1) << kTreeDepth : n * n;
  // The leaves that never pass the victim (fan-out: from a live place to a
  // live place) come back in the round that sees the death too.
  size_t live_leaves = tree ? TreeLeavesAvoiding(victim, places) : (n - 1) * (n - 1);
  fox::apgas::finish([&] {
    fox::apgas::asyncAt(
        Place{victim}, [](uint64_t delay) { DieIn(delay); }, ms);
  });
  int round = 0;
  for (; round < 2000; ++round) {
    g_arrived = 0;
    bool died = false;
    size_t others = 0;
    try {
      fox::apgas::finish([&] {
        if (tree) {
          TreeNode(0, 0, places);
          return;
        }
        for (Place p : places) {
          fox::apgas::asyncAt(
              p,
              [](std::vector<Place> all, bool own_finish) {
                auto fan_out = [&all] {
                  for (Place q : all) {
                    fox::apgas::asyncAt(q, [] {
                      SleepMs(2);
                      fox::apgas::asyncAt(Place{0}, [] { Arrive(); });
                    });
                  }
                };
                if (own_finish) {
                  fox::apgas::finish(fan_out);
                } else {
                  fan_out();
                }
              },
              places, nested);
        }
      });
    } catch (const fox::apgas::MultipleExceptions& m) {
      died = m.HasDeadPlace(Place{victim});
      others = m.exceptions().size() - m.DeadPlaces() + (m.DeadPlaces() - (died ? 1 : 0));
      if (others != 0) std::printf("apgas: the round threw %s\n", m.what());
    }
    uint64_t at_return = g_arrived.load();
    if (!died) {
      CHECK(others == 0 && at_return == leaves);  // a whole round
      continue;
    }
    SleepMs(1500);  // anything still running of that round would arrive meanwhile
    uint64_t later = g_arrived.load() - at_return;
    std::printf(
        "apgas: random kill of place %u after %llu ms%s: %d whole rounds, then a round with %llu of %zu "
        "leaves back, %llu after its finish returned, %zu other exceptions\n",
        victim, (unsigned long long)ms,
        tree     ? " in tree rounds"
        : nested ? " in nested rounds"
                 : "",
        round, (unsigned long long)at_return, leaves, (unsigned long long)later, others);
    if (at_return < live_leaves) {
      std::printf("apgas: random kill: only %llu leaves back, but the %zu that never passed place %u must all be\n",
                  (unsigned long long)at_return, live_leaves, victim);
    }
    CHECK(later == 0 && others == 0 && at_return >= live_leaves);
    return;
  }
  std::printf("apgas: place %u never died\n", victim);
  CHECK(false);
}

void Kill(uint32_t victim) {
  auto places = fox::apgas::places();
  g_arrived = 0;
  uint64_t t0 = fox::clock::NowNs();
  bool dead_named = false;
  size_t others = 0;
  try {
    fox::apgas::finish([&] {
      for (Place p : places) {
        if (p.id == victim) {
          fox::apgas::asyncAt(p, [] {
            std::printf("apgas_node: place %u dies now\n", fox::apgas::here().id);
            std::fflush(stdout);
            std::_Exit(9);
          });
        } else {
          fox::apgas::asyncAt(p, [] { fox::apgas::asyncAt(Place{0}, [] { Arrive(); }); });
        }
      }
    });
  } catch (const fox::apgas::MultipleExceptions& m) {
    dead_named = m.HasDeadPlace(Place{victim});
    others = m.exceptions().size() - m.DeadPlaces();
    std::printf("apgas: the finish threw: %s\n", m.what());
  }
  uint64_t ms = (fox::clock::NowNs() - t0) / 1'000'000;
  std::printf(
      "apgas: place %u died inside a fan-out: DeadPlaceException %s, %zu other exceptions, %llu of %zu "
      "activities back, %llu ms\n",
      victim, dead_named ? "named it" : "MISSING", others, (unsigned long long)g_arrived.load(), places.size() - 1,
      (unsigned long long)ms);
  CHECK(dead_named && others == 0 && g_arrived.load() == places.size() - 1);
  CHECK(fox::apgas::isDead(Place{victim}));
  bool threw = false;
  try {
    (void)fox::apgas::at(Place{victim}, [] { return 1; });
  } catch (const fox::apgas::DeadPlaceException& e) {
    threw = e.place() == Place{victim};
  }
  CHECK(threw);
  std::printf("apgas: at(dead place %u) threw DeadPlaceException\n", victim);
}

void Orphans(uint32_t victim) {
  auto places = fox::apgas::places();
  g_arrived = 0;
  bool dead_named = false;
  try {
    fox::apgas::finish([&] {
      fox::apgas::asyncAt(
          Place{victim},
          [](std::vector<Place> all) {
            for (Place q : all) {
              if (q == fox::apgas::here()) continue;
              fox::apgas::asyncAt(
                  q,
                  [](Place k) {
                    fox::apgas::asyncAt(k, [] { g_orphans_started.fetch_add(1); });
                    SleepMs(3000);
                    fox::apgas::asyncAt(Place{0}, [] { Arrive(); });
                  },
                  fox::apgas::here());
            }
            fox::apgas::asyncAt(
                fox::apgas::here(),
                [](uint64_t n) {
                  // Dies once every orphan runs (each said so), so that all of
                  // them exist: the finish must wait for every one.
                  for (int i = 0; i < 2000 && g_orphans_started.load() < n; ++i) SleepMs(5);
                  std::printf("apgas_node: place %u dies now, its %llu orphans running\n", fox::apgas::here().id,
                              (unsigned long long)g_orphans_started.load());
                  std::fflush(stdout);
                  std::_Exit(9);
                },
                uint64_t(all.size() - 1));
          },
          places);
    });
  } catch (const fox::apgas::MultipleExceptions& m) {
    dead_named = m.HasDeadPlace(Place{victim});
  }
  uint64_t at_return = g_arrived.load();
  SleepMs(1500);  // an orphan still running would send its activity back meanwhile
  uint64_t later = g_arrived.load();
  std::printf(
      "apgas: orphans of dead place %u: %llu of %zu ended before the finish returned, %llu after; "
      "DeadPlaceException %s\n",
      victim, (unsigned long long)at_return, places.size() - 1, (unsigned long long)(later - at_return),
      dead_named ? "named it" : "MISSING");
  if (at_return != places.size() - 1)
    std::printf("apgas: orphans: %llu of them ran before the finish returned, not all %zu\n",
                (unsigned long long)at_return, places.size() - 1);
  CHECK(later == at_return && dead_named && at_return == places.size() - 1);
}

// Place `victim` opens a finish (and, inside one of its activities, a
// nested one), sends activities of both to every other place and dies while
// they run (each sleeps 3 s, then sends one back to this place): they are
// adopted by this place's finish (modes place0, optimistic), which returns
// only after they all ended. Returns {ended before it returned, ended
// after, DeadPlaceException named the victim, other exceptions}.
std::vector<uint64_t> HomeKillRound(uint32_t victim, uint64_t sleep_ms) {
  auto places = fox::apgas::places();
  g_arrived = 0;
  bool dead_named = false;
  size_t others = 0;
  try {
    fox::apgas::finish([&] {
      fox::apgas::asyncAt(
          Place{victim},
          [](std::vector<Place> all, Place collector, uint64_t ms) {
            auto orphans = [all, collector, ms] {
              for (Place q : all) {
                if (q == fox::apgas::here()) continue;
                fox::apgas::asyncAt(
                    q,
                    [](Place back, uint64_t sleep) {
                      SleepMs(sleep);
                      fox::apgas::asyncAt(back, [] { Arrive(); });
                    },
                    collector, ms);
              }
            };
            // The place dies in the nested finish's body, once both finishes
            // have sent their activities (dying from the outer body after a
            // Linger could come before the nested async had even run: seen in
            // CI, 3 of 6 sent), and they have left: acknowledged by their places.
            fox::apgas::finish([&] {
              orphans();
              fox::apgas::async([&] {
                fox::apgas::finish([&] {
                  orphans();
                  fox::am::Linger(5000);
                  std::printf("apgas_node: place %u dies now, inside two finishes whose activities run elsewhere\n",
                              fox::apgas::here().id);
                  std::fflush(stdout);
                  std::_Exit(9);
                });
              });
            });
          },
          places, fox::apgas::here(), sleep_ms);
    });
  } catch (const fox::apgas::MultipleExceptions& m) {
    dead_named = m.HasDeadPlace(Place{victim});
    others = m.exceptions().size() - (dead_named ? 1 : 0);
  }
  uint64_t at_return = g_arrived.load();
  SleepMs(sleep_ms);  // an activity still running would send its activity back meanwhile
  return {at_return, g_arrived.load() - at_return, dead_named ? 1u : 0u, others};
}

// home_kill,K[,V[,MS]]: HomeKillRound at place V (default 0, the root
// finish), the activities sleeping MS ms (default 3000; longer than the
// detector takes, or a finish that does not adopt them would see them end
// before it returns all the same).
void HomeKill(uint32_t victim, uint32_t via, uint64_t sleep_ms) {
  auto places = fox::apgas::places();
  std::vector<uint64_t> r =
      via == 0 ? HomeKillRound(victim, sleep_ms)
               : fox::apgas::at(
                     Place{via}, [](uint32_t v, uint64_t ms) { return HomeKillRound(v, ms); }, victim, sleep_ms);
  CHECK(r.size() == 4);
  std::printf(
      "apgas: finishes homed at dead place %u: %llu of %zu of their activities ended before %s finish "
      "returned, %llu after; DeadPlaceException %s, %llu other exceptions\n",
      victim, (unsigned long long)r[0], 2 * (places.size() - 1),
      via == 0 ? "the root" : ("place " + std::to_string(via) + "'s").c_str(), (unsigned long long)r[1],
      r[2] != 0 ? "named it" : "MISSING", (unsigned long long)r[3]);
  CHECK(r[0] == 2 * (places.size() - 1) && r[1] == 0 && r[2] != 0 && r[3] == 0);
}

}  // namespace apgas_node
