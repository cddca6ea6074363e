// Shared by the scenarios of the Dht's hosted cluster test program
// (dht_node.cc lists them; one file each in this folder): this program's
// control messages, the keys and values the scenarios write and check, and
// a scenario's life (RunMode). Any failed CHECK prints its line and
// condition and exits 1.
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fox/clock.h"
#include "fox/ebb/dht.h"
#include "fox/ebb/messenger.h"
#include "fox/net/am.h"
#include "fox/timer.h"

namespace dht_node {
using fox::HandlerId;
using fox::NodeId;
using fox::ebb::Dht;
using fox::ebb::DhtWrite;

inline constexpr fox::EbbId kControl{0x00D70001};  // this program's control messages (a dynamic-looking id)
enum : uint16_t { kDie = 1, kQuit = 2, kPid = 3, kPause = 4, kJoinGo = 5, kCheck = 6 };
inline std::atomic<bool> g_join_go{false};
inline std::atomic<uint64_t> g_check{0};
inline std::atomic<bool> g_quit{false};
inline std::atomic<uint64_t> g_expected{0};

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::printf("dht_node: check failed at line %d: %s\n", __LINE__, #cond); \
      std::fflush(stdout);                                                     \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

std::string Key(uint64_t i);
std::string Value(uint64_t i, size_t size);
// Mostly small values, some above one message (1408 bytes).
size_t SizeOf(uint64_t i);
void SleepMs(uint64_t ms);
// Sends this program's control message `handler` with `arg` to `to`.
void Control(NodeId to, HandlerId handler, uint64_t arg);

struct Tally {
  uint64_t ok = 0, missing = 0, wrong = 0;
};
// Reads keys first .. first + keys - 1 (Key, Value, SizeOf, flags i) and
// `big` values of kDhtMaxValue bytes ("big:B").
Tally ReadAll(Dht* dht, uint64_t first, uint64_t keys, int big);

inline bool WaitUntil(uint64_t ms, auto done) {
  uint64_t deadline = fox::clock::NowNs() + ms * 1'000'000;
  while (!done()) {
    if (fox::clock::NowNs() > deadline) return false;
    SleepMs(10);
  }
  return true;
}

// WaitUntil for a word from node 0, but false at once if node 0 ended
// first (a check of its failed: the others must not wait out the time).
inline bool WaitForNode0(uint64_t ms, auto done) {
  WaitUntil(ms, [&] { return done() || fox::am::State(0) == fox::am::PeerState::kDead; });
  if (!done() && fox::am::State(0) == fox::am::PeerState::kDead) std::printf("dht_node: node 0 ended first\n");
  return done();
}

// Where this node's Dht requests were served: the cores whose shards served
// any (dht.h, "Shards"), of the cores that serve shards.
void ReportShards(Dht* dht);
// Once every peer is alive: the Dht with replication r. Returns the peers.
std::vector<NodeId> StartDht(Dht* dht, uint32_t r);

// A mode's life: dies with the script that started it, starts the
// transport with this program's control messages going to `control`, runs
// `body` (its status), says done.
template <class Control, class Body>
inline int RunMode(Control control, Body body) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  auto config = fox::am::ConfigFromBootArgs();
  if (!config.ok()) return 2;
  Dht* dht = &*Dht::Get();  // before the transport: its receiver
  CHECK(fox::ebb::Messenger::Get()->Listen(kControl, control).ok());
  if (auto r = fox::am::Start(*config); !r.ok()) return 1;
  int status = body(dht);
  std::printf("dht_node: done\n");
  std::fflush(stdout);
  return status;
}

// The scenarios (argv as main's): their files in this folder.
int Failover(int argc, char** argv);
int Sync(int argc, char** argv);
int Join(int argc, char** argv);
int Tombstones(int argc, char** argv);
int Zombie(int argc, char** argv);

}  // namespace dht_node
