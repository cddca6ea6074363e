// Shared by apgas_node's steps (apgas_node.cc lists them; a file per kind
// in this folder): CHECK, the counters activities bump at place 0, and a
// place that dies on purpose.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "fox/apgas/apgas.h"

namespace apgas_node {

using fox::apgas::Place;

#define CHECK(cond)                                                                      \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::printf("apgas_node: CHECK FAILED: %s at %s:%d\n", #cond, __FILE__, __LINE__); \
      std::fflush(stdout);                                                               \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

// Bumped by activities that place 0 sends back to itself.
inline std::atomic<uint64_t> g_arrived{0};
inline std::atomic<uint64_t> g_local{0};
inline void Arrive() { g_arrived.fetch_add(1); }

void SleepMs(uint64_t ms);
// This place dies (std::_Exit) `ms` from now, whatever it is doing.
void DieIn(uint64_t ms);
// Lines the places report to place 0 (at(Place{0}, Record, ...)).
inline std::mutex g_results_lock;
inline std::vector<std::string> g_results;
void Record(std::string line);
// Place `victim` ends itself inside a finish; true if the finish named it.
bool KillPlace(uint32_t victim);

// The steps (main's dispatch), by file.
void Basic();  // basic.cc
void Global();
void TeamOps();  // team.cc
void TeamKill(uint32_t victim);
void TeamGathererKill();
void RandomKill(uint32_t victim, uint64_t ms, const std::string& shape);  // kills.cc
void Kill(uint32_t victim);
void Orphans(uint32_t victim);
void HomeKill(uint32_t victim, uint32_t via, uint64_t sleep_ms);
void Store();  // store.cc
void StoreRecover(uint32_t victim);
void StoreKill(uint32_t victim, uint64_t ms);
void AddPlaces();  // places.cc
void Spares();
void Balance(uint64_t ms);  // balance.cc
void Delegates();           // delegate.cc
void DelegateKill(uint32_t victim);

}  // namespace apgas_node
