// apgas_node steps team, team_kill,K and team_gatherer_kill (apgas_node.cc
// says what they check).
#include <string>
#include <vector>

#include "fox/apgas/team.h"
#include "fox/timer.h"

#include "common.h"

namespace apgas_node {

void TeamOps() {
  auto places = fox::apgas::places();
  g_results.clear();
  fox::apgas::finish([&] {
    for (Place p : places) {
      fox::apgas::asyncAt(
          p,
          [](std::vector<Place> group) {
            fox::apgas::Team team(group);
            team.barrier();
            long n = long(group.size());
            long sum = team.allreduce(long(fox::apgas::here().id) + 1, fox::apgas::Team::Sum<long>());
            auto arr = team.allreduce(std::vector<double>{double(fox::apgas::here().id), 1.0},
                                      fox::apgas::Team::Sum<double>());
            long top = team.allreduce(long(fox::apgas::here().id), fox::apgas::Team::Max<long>());
            std::string word = team.broadcast(group.front(), std::string("from the first member"));
            int agreed = team.agree(fox::apgas::here().id == group.back().id ? 0x6 : 0x7);
            team.barrier();
            bool ok = sum == n * (n + 1) / 2 && arr.size() == 2 && arr[1] == double(n) &&
                      arr[0] == double(n * (n - 1) / 2) && top == long(group.back().id) &&
                      word == "from the first member" && agreed == 0x6;
            std::string line = "place " + std::to_string(fox::apgas::here().id) + (ok ? " ok" : " WRONG");
            fox::apgas::at(
                Place{0}, [](std::string l) { Record(l); }, line);
          },
          places);
    }
  });
  size_t ok = 0;
  for (auto& r : g_results) ok += r.find(" ok") != std::string::npos;
  std::printf("apgas: team of %zu places: barrier, allreduce, broadcast, agree: %zu of %zu right\n", places.size(), ok,
              places.size());
  CHECK(ok == places.size());
}

void TeamKill(uint32_t victim) {
  auto places = fox::apgas::places();
  g_results.clear();
  try {
    fox::apgas::finish([&] {
      for (Place p : places) {
        fox::apgas::asyncAt(
            p,
            [](std::vector<Place> group, uint32_t dies) {
              fox::apgas::Team team(group);
              team.barrier();
              std::string seen = "no exception";
              try {  // the victim's death may fail the barrier it left (its answers to others lost with it)
                team.barrier();
                if (fox::apgas::here().id == dies) std::_Exit(9);
                team.barrier();
              } catch (const fox::apgas::DeadPlaceException& e) {
                seen = "DeadPlaceException " + std::to_string(e.place().id);
              }
              int agreed = team.agree(0x3);
              fox::apgas::at(
                  Place{0}, [](std::string l) { Record(l); },
                  std::string("place ") + std::to_string(fox::apgas::here().id) + ": " + seen + ", agreed " +
                      std::to_string(agreed));
            },
            places, victim);
      }
    });
  } catch (const fox::apgas::MultipleExceptions& m) {
    std::printf("apgas: team_kill: the finish threw: %s\n", m.what());
  }
  size_t right = 0;
  for (auto& r : g_results) {
    std::printf("apgas: team_kill: %s\n", r.c_str());
    right += r.find(": DeadPlaceException " + std::to_string(victim) + ", agreed 3") != std::string::npos;
  }
  std::printf("apgas: team member %u died: %zu of %zu survivors saw DeadPlaceException and agreed alike\n", victim,
              right, places.size() - 1);
  CHECK(right == places.size() - 1);
}

// Team over places 1.. (at least three): its gatherer, place 1, answers its
// agree to itself and place 2 only, then dies (fox::apgas::testing's
// filter). Place 3 asks place 2, the next gatherer, which must answer as
// place 1 did: every survivor agrees on the AND of all three contributions
// (0xff without bits 1, 2 and 3), then its next barrier throws
// DeadPlaceException(1).
void TeamGathererKill() {
  auto all = fox::apgas::places();
  std::vector<Place> group(all.begin() + 1, all.end());
  CHECK(group.size() >= 3);
  g_results.clear();
  try {
    fox::apgas::finish([&] {
      for (Place p : group) {
        fox::apgas::asyncAt(
            p,
            [](std::vector<Place> group) {
              fox::apgas::Team team(group);
              team.barrier();
              uint32_t cut = group[2].id;
              if (fox::apgas::here() == group[0]) {
                fox::apgas::testing::SetTeamDeliverFilter([cut](uint64_t op, uint32_t member) {
                  if (op != 1 || member != cut) return true;
                  DieIn(300);  // the answers sent are acknowledged by then
                  return false;
                });
              }
              int agreed = team.agree(0xff & ~(1 << fox::apgas::here().id));
              std::string seen = "no exception";
              try {
                team.barrier();
              } catch (const fox::apgas::DeadPlaceException& e) {
                seen = "DeadPlaceException " + std::to_string(e.place().id);
              }
              fox::apgas::at(
                  Place{0}, [](std::string l) { Record(l); },
                  std::string("place ") + std::to_string(fox::apgas::here().id) + ": agreed " + std::to_string(agreed) +
                      ", then " + seen);
            },
            group);
      }
    });
  } catch (const fox::apgas::MultipleExceptions& m) {
    std::printf("apgas: team_gatherer_kill: the finish threw: %s\n", m.what());
  }
  int expect = 0xff;
  for (Place p : group) expect &= ~(1 << p.id);
  size_t right = 0;
  for (auto& r : g_results) {
    std::printf("apgas: team_gatherer_kill: %s\n", r.c_str());
    right += r.find(": agreed " + std::to_string(expect) + ", then DeadPlaceException " +
                    std::to_string(group[0].id)) != std::string::npos;
  }
  std::printf("apgas: team gatherer %u died while answering: %zu of %zu survivors agreed alike, then saw it dead\n",
              group[0].id, right, group.size() - 1);
  CHECK(right == group.size() - 1);
}

}  // namespace apgas_node
