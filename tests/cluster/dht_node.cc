// The Dht's hosted cluster test program (ebb/include/fox/ebb/dht.h): every
// node runs the Dht; one node, the client, drives it; one other node, the
// victim, is killed with SIGKILL midway. Run by hosted_nodes.py (tests.cmake).
// One scenario per run, each in a file of its own under dht_node/:
//
//   dht_node CLIENT VICTIM KEYS [R]   failover.cc: a node killed midway
//   dht_node sync ROUNDS [R]          sync.cc: libFOX under contention
//   dht_node join KEYS [kill]         join.cc: rebalancing after a join
//   dht_node tombstones KEYS          tombstones.cc: tombstones collected
//   dht_node zombie KEYS              zombie.cc: a node declared dead while it ran
#include <cstdio>
#include <string>

#include "dht_node/common.h"

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (argc >= 3 && mode == "zombie") return dht_node::Zombie(argc, argv);
  if (argc >= 3 && mode == "tombstones") return dht_node::Tombstones(argc, argv);
  if (argc >= 3 && mode == "join") return dht_node::Join(argc, argv);
  if (argc >= 3 && mode == "sync") return dht_node::Sync(argc, argv);
  if (argc >= 4) return dht_node::Failover(argc, argv);
  std::printf(
      "usage: dht_node CLIENT VICTIM KEYS [R] | dht_node sync ROUNDS [R] | dht_node zombie KEYS | dht_node join "
      "KEYS [kill] | dht_node tombstones KEYS\n");
  return 2;
}
