// apgas::Main (apgas.h): a place's life. Every place starts its network and
// transport from the boot arguments (fox.node, fox.peers: the job's places),
// joins place 0 (which checks that every place has the same closures), and
// then place 0 runs the program inside a root finish while the others serve
// activities until place 0 ends the job.
#include <algorithm>
#include <cstdlib>
#include <cstdio>

#include "fox/boot_args.h"
#include "fox/ebb/dht.h"
#include "fox/ebb/file_system.h"
#include "fox/ebb/messenger.h"
#include "fox/ebb/rpc.h"
#include "fox/net/am.h"
#include "fox/timer.h"
#include "buddy_service.h"
#include "delegate_service.h"
#include "runtime.h"
#include "team_service.h"
#ifdef FOX_NATIVE
#include "fox/net/ip.h"
#endif

namespace fox::apgas {
namespace {
// Tests (hosted builds only): sleeps the milliseconds the environment
// variable `name` gives, if set. Natively nothing.
void TestDelay(const char* name) {
#ifndef FOX_NATIVE
  if (const char* ms = std::getenv(name)) timer::Sleep(std::strtoull(ms, nullptr, 10) * 1'000'000);
#else
  (void)name;
#endif
}
}  // namespace

int Main(int, char**, Function<void()> body) {
  auto config = am::ConfigFromBootArgs();
  if (!config.ok()) return 2;
  std::vector<Place> all{Place{config->self}};
  if (const char* peers = BootArg("fox.peers")) {
    (void)am::ParsePeers(peers, config->port, [&](NodeId n, uint32_t, uint16_t) { all.push_back(Place{n}); });
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  if (all.front().id != 0) {
    std::printf("apgas: the job has no place 0 (fox.node=0 in fox.peers)\n");
    return 2;
  }
  detail::FinishMode mode = detail::FinishMode::kNone;
  if (const char* text = BootArg("fox.finish"); text != nullptr && !detail::ParseFinishMode(text, &mode)) {
    std::printf("apgas: bad fox.finish=%s: none, place0 or optimistic\n", text);
    return 2;
  }
#ifdef FOX_NATIVE
  if (int status = net::StartFromBootArgs("apgas"); status != 0) return status;
#endif
  // Receivers before the transport: peers may talk as soon as it starts.
  (void)ebb::Messenger::Get()->Self();
  auto runtime = detail::Runtime::Get();
  runtime->SetPlaces(all);
  runtime->SetMode(mode);
  (void)detail::TeamService::Get()->waiting();    // Team's receiver, before the transport
  (void)detail::BuddyService::Get()->stats();     // the buddy store's (checkpoints)
  (void)detail::DelegateService::Get()->stats();  // delegates' (this core applies them)
  (void)ebb::FileSystem::Get()->server();         // place 0 serves the job's input files
  ebb::Dht* dht = &*ebb::Dht::Get();              // the resilient store's (store.h), every place a member
  if (auto r = am::Start(*config); !r.ok()) {
    std::printf("apgas: place %u: cannot start the transport: %s\n", config->self, ErrorName(r.error()));
    return 1;
  }
  // Happens-before invariance for the store: a dead place's writes are
  // applied or refused everywhere before a finish that governs it returns.
  runtime->AddDeathHook([dht](uint32_t dead) { dht->Quiesce(dead); });
  auto start_dht = [&] {
    if (config->self != 0) TestDelay("FOX_TEST_STORE_DELAY_MS");  // a place whose store comes up after it joined
    std::vector<NodeId> members;
    for (Place p : all) members.push_back(p.id);
    auto r = dht->Start(ebb::RingConfig{}, members);
    if (!r.ok()) std::printf("apgas: place %u: cannot start the Dht: %s\n", config->self, ErrorName(r.error()));
    return r.ok();
  };
  if (config->self != 0) {
    auto joined = runtime->Join();
    if (!joined.ok) return 1;
    if (joined.late) {  // a place the running job asked for (PlaceManager::addPlaces)
      std::vector<Place> now;
      for (uint32_t id : joined.places) now.push_back(Place{id});
      runtime->SetPlaces(now);
      runtime->MarkDead(joined.dead);
      if (auto r = dht->Join(ebb::RingConfig{}, {joined.dht_members.begin(), joined.dht_members.end()}); !r.ok()) {
        std::printf("apgas: place %u: cannot join the Dht: %s\n", config->self, ErrorName(r.error()));
        return 1;
      }
      if (!runtime->Ready()) return 1;
    } else if (!start_dht()) {
      return 1;
    }
    runtime->Open();                      // activities place 0 sent since the join may use the store now
    ebb::Messenger::Get()->ProbePeers();  // direct large messages from the first one (hosted)
    bool ended = runtime->Serve();
    if (!ended) std::printf("apgas: place %u: place 0 died: the job is over\n", config->self);
    return ended ? 0 : 1;
  }
  if (!start_dht()) return 1;
  TestDelay("FOX_TEST_AWAIT_DELAY_MS");  // place 0 late to await the joins, which have all come by then
  if (!runtime->AwaitJoins(120'000)) {
    runtime->Shutdown();
    return 1;
  }
  runtime->Open();
  ebb::Messenger::Get()->ProbePeers();
  std::printf("apgas: %zu places, finish mode %s\n", all.size(), detail::FinishModeName(mode));
  int status = 0;
  try {
    detail::FinishBlock(std::move(body));
  } catch (const std::exception& e) {
    std::printf("apgas: the program failed: %s\n", e.what());
    status = 1;
  }
  runtime->Shutdown();
  return status;
}

}  // namespace fox::apgas
