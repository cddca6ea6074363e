// dht_node zombie KEYS: fail-stop for a node declared dead while it ran
// (dht_node.cc lists the scenarios).
//
// Fail-stop for a node the job declared dead while it still ran (am's
// fencing): 3 nodes, r = 2. Node 0 sets KEYS keys, then node 2 stops
// itself (SIGSTOP, as a starved or partitioned node would go silent); once
// node 0 sees it declared dead, node 0 rewrites every key on the
// survivors, waits for their rebuild and resumes node 2 (SIGCONT). Node 2,
// which still believes in its old ring and its stale copies, tries a write
// at once: it must never be acknowledged, and node 2 must stop (status 3)
// instead of living on beside the job. Node 0 checks every key has its new
// value and the zombie's write is nowhere.
#include <algorithm>
#include <string>

#include "fox/net/wire.h"

#include "common.h"

namespace dht_node {
namespace {

// /proc/PID/stat's state letter: 'Z' (ended, not yet reaped), '?' (gone).
char ProcessState(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", int(pid));
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return '?';
  char state = '?';
  if (std::fscanf(f, "%*d (%*[^)]) %c", &state) != 1) state = '?';
  std::fclose(f);
  return state;
}

std::atomic<int64_t> g_zombie_pid{0};

int Zombie(Dht* dht, uint64_t keys) {
  NodeId self = fox::am::Self();
  if (self == 2) {
    Control(0, kPid, uint64_t(getpid()));
    CHECK(WaitUntil(600'000, [] { return g_quit.load(); }));  // fenced before that
    return 0;
  }
  if (self != 0) {
    CHECK(WaitUntil(600'000, [] { return g_quit.load(); }));
    return 0;
  }
  CHECK(WaitUntil(30'000, [] { return g_zombie_pid.load() != 0; }));
  pid_t zombie = pid_t(g_zombie_pid.load());
  uint64_t failed = 0;
  for (uint64_t i = 0; i < keys; ++i) failed += !dht->Set(Key(i), "before").ok();
  std::printf("dht_zombie: set %llu keys: %llu failed\n", (unsigned long long)keys, (unsigned long long)failed);
  CHECK(failed == 0);
  Control(2, kPause, 0);
  uint64_t paused = fox::clock::NowNs();
  CHECK(WaitUntil(60'000, [] { return fox::am::State(2) == fox::am::PeerState::kDead; }));
  std::printf("dht_zombie: node 2 declared dead %llu ms after it stopped itself\n",
              (unsigned long long)((fox::clock::NowNs() - paused) / 1'000'000));
  for (uint64_t i = 0; i < keys; ++i) failed += !dht->Set(Key(i), "after").ok();
  CHECK(WaitUntil(30'000, [&] { return dht->stats().rebuilds_running == 0; }));
  std::printf("dht_zombie: every key rewritten on the survivors: %llu failed\n", (unsigned long long)failed);
  CHECK(failed == 0);
  kill(zombie, SIGCONT);
  uint64_t resumed = fox::clock::NowNs();
  bool ended = WaitUntil(20'000, [&] { return ProcessState(zombie) == 'Z' || ProcessState(zombie) == '?'; });
  std::printf("dht_zombie: node 2 resumed, %s\n", ended ? "and ended" : "and still runs 20 s later");
  CHECK(ended);
  std::printf("dht_zombie: node 2 ended %llu ms after it resumed\n",
              (unsigned long long)((fox::clock::NowNs() - resumed) / 1'000'000));
  uint64_t fresh = 0, stale = 0, missing = 0;
  for (uint64_t i = 0; i < keys; ++i) {
    auto got = dht->Get(Key(i));
    if (!got.ok()) {
      ++missing;
    } else if (got->value == "after") {
      ++fresh;
    } else {
      ++stale;
    }
  }
  auto ghost = dht->Get("zombie-write");
  std::printf("dht_zombie: %llu keys read back: %llu fresh, %llu stale, %llu missing; the zombie's write: %s\n",
              (unsigned long long)keys, (unsigned long long)fresh, (unsigned long long)stale,
              (unsigned long long)missing, ghost.ok() ? "found" : fox::ErrorName(ghost.error()));
  CHECK(fresh == keys && !ghost.ok() && ghost.error() == fox::Error::kNotFound);
  Control(1, kQuit, 0);
  return 0;
}

}  // namespace

int Zombie(int argc, char** argv) {
  if (argc < 3) return 2;
  uint64_t keys = std::strtoull(argv[2], nullptr, 10);
  g_expected = keys;  // the zombie reads one of them
  auto control = [](NodeId, HandlerId handler, const uint8_t* data, size_t length) {
    if (length != 8) return;
    if (handler == kQuit) {
      g_quit = true;
    } else if (handler == kPid) {
      g_zombie_pid = int64_t(fox::net::wire::Load64(data));
    } else if (handler == kPause) {
      std::printf("dht_zombie: node %u stops itself (SIGSTOP)\n", fox::am::Self());
      std::fflush(stdout);
      kill(getpid(), SIGSTOP);
      // Resumed, still holding its old ring and stale copies: a read of a
      // key it is the primary of must not answer from its stale copy (its
      // lease ran out while it was stopped: dht/local.cc, "Read leases"), and a
      // write must never be acknowledged (its replicas hold this node dead).
      for (uint64_t i = 0; i < g_expected.load(); ++i) {
        if (Dht::Get()->OwnersOf(Key(i)).front() != fox::am::Self()) continue;
        auto got = Dht::Get()->Get(Key(i));
        std::printf("dht_zombie: node %u's read of %s after resuming: %s\n", fox::am::Self(), Key(i).c_str(),
                    !got.ok()                ? fox::ErrorName(got.error())
                    : got->value == "before" ? "READ STALE"
                                             : "fresh");
        std::fflush(stdout);
        break;
      }
      auto r = Dht::Get()->Set("zombie-write", "stale");
      std::printf("dht_zombie: node %u's write after resuming: %s\n", fox::am::Self(),
                  r.ok() ? "ACKNOWLEDGED" : fox::ErrorName(r.error()));
      std::fflush(stdout);
    }
  };
  return RunMode(control, [keys](Dht* dht) {
    (void)StartDht(dht, 2);
    return Zombie(dht, keys);
  });
}

}  // namespace dht_node
