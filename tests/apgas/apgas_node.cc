// apgas_node: the APGAS runtime's tests (tests/apgas/tests.cmake), one
// program built as a node image and as a hosted Linux program. Every place
// runs it; place 0 runs the checks named on its command line, in order:
//   basic      nested finish, local and remote asyncs, fan-out with a message
//              back, tree fan-out, at returning values (numbers, strings) and
//              rethrowing exceptions, exception aggregation by finish
//   global     GlobalRef (remote updates of a place-0 object; dereferenced
//              elsewhere: an error) and PlaceLocal (one object per place)
//   team       Team over every place: barrier, allreduce (a number and an
//              array), broadcast of a string, agree
//   team_kill,K  place K dies between barriers: every survivor's barrier
//              throws DeadPlaceException naming K (the next one, or the one
//              K left if K's answers died with it; no hang), and agree then
//              gives every survivor the same answer
//   team_gatherer_kill  a Team over places 1..: its gatherer dies while
//              answering, having answered only some members: every
//              survivor agrees alike (the others are answered as they were)
//   random_kill,K,MS[,tree|nested]  place K dies MS ms into repeated
//              fan-out-fan-out rounds (tree: rounds of a binary tree of
//              activities 5 levels deep over the places, 32 leaves; nested:
//              each place's fan-out inside its own finish, which K's death
//              leaves to be adopted: modes place0 and optimistic)
//              (each leaf sleeps 2 ms and sends one back to place 0): every
//              round before completes whole; the round that sees the death
//              throws only DeadPlaceException(K), every leaf of it that
//              never passed K arrives, and nothing arrives after its finish
//              returned
//   orphans,K  place K sends an activity to every other place and dies as
//              soon as they all run: those orphans (each sleeps 3 s, longer
//              than the detector takes, then sends one back to place 0) must
//              all have ended when the finish returns (happens-before
//              invariance): every one arrived before it, nothing after
//   delegate   a GlobalArray over every place: delegate reads and writes
//              and forall; workers at every place on every core contend
//              with blocking fetch_add, compare_exchange, call and
//              fetch_xor and asynchronous add, call and xor on shared
//              words, which end exact (every fetch_add saw a distinct
//              value); double add; an index out of range and a destroyed
//              array refused (blocking and asynchronous)
//   delegate_kill,K  place K dies while every place sends it delegates:
//              the finish throws DeadPlaceException(K) alone (no hang),
//              and every other place's block still answers
//   home_kill,K[,V[,MS]]  place K opens a finish and a nested one (inside
//              an activity of a finish at place V, default 0: the root), sends
//              activities of both to every other place (each sleeps MS ms,
//              default 3000, then sends one back to V) and dies once they are
//              acknowledged: with fox.finish=place0 or
//              optimistic V's finish adopts them and returns after they all
//              ended
// The steps live in apgas_node/, a file per kind (common.h lists them).
#include <cstdlib>
#include <string>

#include "apgas_node/common.h"

using namespace apgas_node;

int main(int argc, char** argv) {
  return fox::apgas::Main(argc, argv, [argc, argv] {
    for (int i = 1; i < argc; ++i) {
      std::string step = argv[i];
      if (step == "basic") {
        Basic();
      } else if (step.rfind("balance,", 0) == 0) {
        Balance(std::strtoull(step.c_str() + 8, nullptr, 10));
      } else if (step == "team") {
        TeamOps();
      } else if (step == "team_gatherer_kill") {
        TeamGathererKill();
      } else if (step.rfind("team_kill,", 0) == 0) {
        TeamKill(uint32_t(std::strtoul(step.c_str() + 10, nullptr, 10)));
      } else if (step == "global") {
        Global();
      } else if (step.rfind("random_kill,", 0) == 0) {
        char* end = nullptr;
        uint32_t victim = uint32_t(std::strtoul(step.c_str() + 12, &end, 10));
        uint64_t ms = 300;
        if (*end == ',') ms = std::strtoull(end + 1, &end, 10);
        RandomKill(victim, ms, *end == ',' ? std::string(end + 1) : "fanout");
      } else if (step.rfind("orphans,", 0) == 0) {
        Orphans(uint32_t(std::strtoul(step.c_str() + 8, nullptr, 10)));
      } else if (step.rfind("home_kill,", 0) == 0) {
        char* end = nullptr;
        uint32_t victim = uint32_t(std::strtoul(step.c_str() + 10, &end, 10));
        uint32_t via = *end == ',' ? uint32_t(std::strtoul(end + 1, &end, 10)) : 0;
        HomeKill(victim, via, *end == ',' ? std::strtoull(end + 1, nullptr, 10) : 3000);
      } else if (step == "delegate") {
        Delegates();
      } else if (step.rfind("delegate_kill,", 0) == 0) {
        DelegateKill(uint32_t(std::strtoul(step.c_str() + 14, nullptr, 10)));
      } else if (step == "add_places") {
        AddPlaces();
      } else if (step == "spares") {
        Spares();
      } else if (step == "store") {
        Store();
      } else if (step.rfind("store_recover,", 0) == 0) {
        StoreRecover(uint32_t(std::strtoul(step.c_str() + 14, nullptr, 10)));
      } else if (step.rfind("store_kill,", 0) == 0) {
        char* end = nullptr;
        uint32_t victim = uint32_t(std::strtoul(step.c_str() + 11, &end, 10));
        StoreKill(victim, *end == ',' ? std::strtoull(end + 1, nullptr, 10) : 300);
      } else if (step.rfind("kill,", 0) == 0) {
        Kill(uint32_t(std::strtoul(step.c_str() + 5, nullptr, 10)));
      } else {
        std::printf("apgas_node: unknown step '%s' (basic, kill,K)\n", step.c_str());
        std::exit(2);
      }
    }
    std::printf("apgas_node: done\n");
  });
}
