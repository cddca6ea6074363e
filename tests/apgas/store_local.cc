// ResilientStore's local copies (store.h): a place reads back its own
// chunked values from memory, never stale, and a dead place's from the
// Dht. An APGAS program of its own, on 3 places:
//
// Places 1 and 2 each set "v" (1 MiB + 1 byte: two chunks) and place 1 a
// small "s" (inline: no copy). Place 1 reads its "v": from its copy (its
// local count +1, its Dht count unchanged), and its "s" from the Dht (not
// counted: inline). Place 2 reads place 1's "v": from the Dht. Place 2's
// Set2 writes place 1's "v" (a value of 100 bytes): place 1 then reads
// that value, not its copy. Place 1 sets "v" big again and place 2 dies;
// place 1 reads its "v" from its copy, place 0 reads dead place 2's whole
// from the Dht. Run by hosted_nodes.py (tests.cmake); a failed check exits
// 1 naming what differs.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "check.h"
#include "fox/apgas/apgas.h"
#include "fox/apgas/store.h"

namespace {
using fox::apgas::Place;
using fox::apgas::ResilientStore;

#define CHECK(...) FOX_APGAS_CHECK("store_local", __VA_ARGS__)

constexpr uint64_t kBig = (uint64_t(1) << 20) + 1;

std::vector<uint8_t> Pattern(uint64_t salt) {
  std::vector<uint8_t> v(kBig);
  for (uint64_t i = 0; i < kBig; ++i) v[i] = uint8_t((i * 7 + salt) & 0xff);
  return v;
}

// Reads `owner`'s "v" at this place; returns whether it is Pattern(salt),
// and how the read went (1: from the local copy, 2: from the Dht).
int ReadV(uint32_t owner, uint64_t salt) {
  ResilientStore::Reads before = ResilientStore::ChunkedReads();
  auto got = ResilientStore::Make("local").GetRemote<std::vector<uint8_t>>(Place{owner}, "v");
  ResilientStore::Reads after = ResilientStore::ChunkedReads();
  CHECK(got && *got == Pattern(salt), "place %u's v read at place %u is not its value", owner, fox::apgas::here().id);
  int local = int(after.local - before.local), remote = int(after.remote - before.remote);
  CHECK(local + remote == 1, "%d local and %d remote reads for one value", local, remote);
  return local ? 1 : 2;
}

void Run() {
  auto store = ResilientStore::Make("local");
  fox::apgas::finish([] {
    for (uint32_t p : {1u, 2u}) {
      fox::apgas::asyncAt(
          Place{p}, [](uint32_t p) { ResilientStore::Make("local").Set("v", Pattern(p)); }, p);
    }
  });
  int how = fox::apgas::at(Place{1}, [] {
    auto s = ResilientStore::Make("local");
    s.Set("s", std::string(100, 's'));
    ResilientStore::Reads before = ResilientStore::ChunkedReads();
    auto small = s.Get<std::string>("s");
    ResilientStore::Reads after = ResilientStore::ChunkedReads();
    CHECK(small && *small == std::string(100, 's'), "place 1's s is not its value");
    CHECK(after.local == before.local && after.remote == before.remote, "an inline value was counted");
    return ReadV(1, 1);
  });
  CHECK(how == 1, "place 1 read its own v from the Dht, not its local copy");
  how = fox::apgas::at(Place{2}, [] { return ReadV(1, 1); });
  CHECK(how == 2, "place 2 read place 1's v from a local copy");
  std::printf("store_local: place 1 read its v from its copy, place 2 read it from the Dht\n");
  // Set2 from place 2 writes place 1's v: place 1 must not read its copy.
  fox::apgas::at(Place{2}, [] {
    ResilientStore::Make("local").Set2("w", std::string("mine"), Place{1}, "v", std::vector<uint8_t>(100, 9));
    return 0;
  });
  bool fresh = fox::apgas::at(Place{1}, [] {
    auto v = ResilientStore::Make("local").Get<std::vector<uint8_t>>("v");
    return v && *v == std::vector<uint8_t>(100, 9);
  });
  CHECK(fresh, "place 1 read its stale copy of v after place 2's Set2 replaced it");
  std::printf("store_local: after another place's Set2 place 1 read the new v\n");
  // Place 2 dies: place 1 reads its own from its copy, place 0 the dead one's from the Dht.
  fox::apgas::at(Place{1}, [] {
    ResilientStore::Make("local").Set("v", Pattern(11));
    return 0;
  });
  try {
    fox::apgas::finish([] {
      fox::apgas::asyncAt(Place{2}, [] {
        std::printf("store_local: place 2 dies now\n");
        std::fflush(stdout);
        std::_Exit(9);
      });
    });
  } catch (const fox::apgas::MultipleExceptions& e) {
    CHECK(e.HasDeadPlace(Place{2}), "%s", e.what());
  }
  how = fox::apgas::at(Place{1}, [] { return ReadV(1, 11); });
  CHECK(how == 1, "survivor place 1 read its own v from the Dht");
  CHECK(ReadV(2, 2) == 2, "place 0 read dead place 2's v from a local copy");
  std::printf(
      "store_local: after place 2 died place 1 read its v from its copy, place 0 place 2's from the Dht: "
      "PASS\n");
}

}  // namespace

int main(int argc, char** argv) {
  return fox::apgas::Main(argc, argv, [] { Run(); });
}
