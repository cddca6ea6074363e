// A second death before the first one's move settles (dht/rebuild.cc; the
// placement model's claim, dht_ring.cc: nothing acknowledged is lost while
// fewer than min(r, n) nodes died since the last settle, and a settled
// ring has every key on all its owners).
//
//   dht_cascade KEYS
//
// 5 hosted nodes, r = 3. Node 0 sets KEYS keys and has node 1 die. Node 2
// dies the moment it hears of node 1's death: before it has copied
// anything it was the source of in the move that death started, so the
// owners it was to fill hold nothing from it. Once the three survivors
// settle (node 2's death declared too: no move can settle without node
// 2's report before), every survivor owns every key (r = 3 on 3 nodes) and
// must hold each with its last value, and every key reads back through
// node 0. Planning the second move from the ring after the first death (as
// if that move were done) leaves the owners node 2 was to fill without
// those keys. Run by hosted_nodes.py (tests.cmake); any failed check exits 1
// naming what differs.
#include <signal.h>
#include <sys/prctl.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fox/clock.h"
#include "fox/ebb/dht.h"
#include "fox/ebb/messenger.h"
#include "fox/net/am.h"
#include "fox/net/wire.h"
#include "fox/timer.h"

namespace {
using fox::HandlerId;
using fox::NodeId;
using fox::ebb::Dht;

constexpr fox::EbbId kControl{0x00D70002};  // this program's control messages
enum : uint16_t { kDie = 1, kCheck = 2 };
std::atomic<uint64_t> g_check{0};

#define CHECK(cond, ...)                                                               \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::printf("dht_cascade: node %u: check failed: %s: ", fox::am::Self(), #cond); \
      std::printf(__VA_ARGS__);                                                        \
      std::printf("\n");                                                               \
      std::fflush(stdout);                                                             \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

std::string Key(uint64_t i) { return "cascade:" + std::to_string(i); }
std::string Value(uint64_t i) { return std::string(1 + i % 200, char('a' + i % 26)); }

bool WaitUntil(uint64_t ms, auto done) {
  uint64_t deadline = fox::clock::NowNs() + ms * 1'000'000;
  while (!done()) {
    if (fox::clock::NowNs() > deadline) return false;
    fox::timer::Sleep(10'000'000);
  }
  return true;
}

void Control(NodeId to, HandlerId handler, uint64_t arg) {
  uint8_t body[8];
  fox::net::wire::StoreLe<uint64_t>(body, arg);
  auto r = fox::ebb::Messenger::Get()->SendWait(to, kControl, handler, body, sizeof body);
  CHECK(r.ok(), "control message to node %u: %s", to, fox::ErrorName(r.error()));
  fox::ebb::Messenger::Get()->Flush(to);
}

void Die(const char* why) {
  std::printf("dht_cascade: node %u dies now (%s)\n", fox::am::Self(), why);
  std::fflush(stdout);
  std::_Exit(9);
}

// A survivor, once its ring of 3 settled: holds every key with its value.
void CheckCopies(Dht* dht, uint64_t keys) {
  CHECK(WaitUntil(60'000, [&] { return dht->members().size() == 3 && dht->stats().settles >= 1; }),
        "ring of %zu nodes, %llu settles after 60 s", dht->members().size(), (unsigned long long)dht->stats().settles);
  uint64_t held = 0;
  for (uint64_t i = 0; i < keys; ++i) held += dht->HoldsCopy(Key(i));
  std::printf("dht_cascade: node %u: settled on 3 nodes, holds %llu of the %llu keys\n", fox::am::Self(),
              (unsigned long long)held, (unsigned long long)keys);
  CHECK(held == keys, "expected a copy of every key here (r = 3 on 3 nodes), %llu missing",
        (unsigned long long)(keys - held));
}

int Run(Dht* dht, uint64_t keys) {
  NodeId self = fox::am::Self();
  auto peers = fox::am::Peers();
  CHECK(WaitUntil(30'000,
                  [&] {
                    for (NodeId n : peers) {
                      if (fox::am::State(n) != fox::am::PeerState::kAlive) return false;
                    }
                    return true;
                  }),
        "not every peer alive after 30 s");
  fox::ebb::RingConfig ring;
  ring.replication = 3;
  CHECK(dht->Start(ring).ok(), "Start");
  if (self == 2) {
    (void)fox::am::OnPeerState([](NodeId node, fox::am::PeerState state) {
      if (node == 1 && state == fox::am::PeerState::kDead) Die("node 1 is dead");
    });
  }
  if (self == 0) {
    uint64_t failed = 0;
    for (uint64_t i = 0; i < keys; ++i) failed += !dht->Set(Key(i), Value(i)).ok();
    CHECK(failed == 0, "%llu of %llu sets failed", (unsigned long long)failed, (unsigned long long)keys);
    Control(1, kDie, 0);
    CheckCopies(dht, keys);
    uint64_t right = 0;
    for (uint64_t i = 0; i < keys; ++i) {
      auto got = dht->Get(Key(i));
      right += got.ok() && got->value == Value(i);
    }
    std::printf("dht_cascade: node 0: %llu of %llu keys read back after two deaths\n", (unsigned long long)right,
                (unsigned long long)keys);
    CHECK(right == keys, "%llu keys missing or wrong", (unsigned long long)(keys - right));
    Control(3, kCheck, keys);
    Control(4, kCheck, keys);
  } else if (self == 3 || self == 4) {
    CHECK(WaitUntil(120'000, [] { return g_check.load() != 0; }), "no word from node 0 in 120 s");
    CheckCopies(dht, g_check.load());
  } else {
    WaitUntil(120'000, [] { return false; });  // nodes 1 and 2 die before this ends
  }
  fox::timer::Sleep(500'000'000);  // the others' checks are local; let the last acks go
  std::printf("dht_cascade: node %u: done\n", self);
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::printf("usage: dht_cascade KEYS\n");
    return 2;
  }
  uint64_t keys = std::strtoull(argv[1], nullptr, 10);
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // dies with the script that started it
  auto config = fox::am::ConfigFromBootArgs();
  if (!config.ok()) return 2;
  Dht* dht = &*Dht::Get();  // before the transport: its receiver
  auto control = [](NodeId, HandlerId handler, const uint8_t* data, size_t length) {
    if (length != 8) return;
    if (handler == kDie) Die("told to");
    if (handler == kCheck) g_check = fox::net::wire::Load64(data);
  };
  CHECK(fox::ebb::Messenger::Get()->Listen(kControl, control).ok(), "Listen");
  if (auto r = fox::am::Start(*config); !r.ok()) return 1;
  return Run(dht, keys);
}
