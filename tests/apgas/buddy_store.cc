// BuddyStore (buddy_store.h) through two deaths, an APGAS program of its
// own on 5 places:
//
//   buddy_store BYTES
//
// Places 1 to 4 each write "v" (BYTES + its id bytes, a pattern of its id)
// and "w" (its id) in one Write. Each reads its own "v" back from its
// master (a local read, no remote one); place 0 reads every place's from
// the owner (remote reads). Place 2 dies: place 0 reads its "v" from a
// backup, and place 1 (whose buddy it was) has re-replicated its values.
// Then place 3 dies, the place that held place 2's backups: place 0 still
// reads both dead places' "v" and "w" (the copies the survivors made after
// the first death), and place 1's from place 1. Run by hosted_nodes.py and
// cluster.py (tests.cmake); a failed check exits 1 naming what differs.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "check.h"
#include "fox/apgas/apgas.h"
#include "fox/apgas/buddy_store.h"

namespace {
using fox::apgas::BuddyStore;
using fox::apgas::Place;

#define CHECK(...) FOX_APGAS_CHECK("buddy_store", __VA_ARGS__)

std::vector<uint8_t> Pattern(uint64_t bytes, uint32_t owner) {
  std::vector<uint8_t> v(bytes + owner);
  for (uint64_t i = 0; i < v.size(); ++i) v[i] = uint8_t((i * 13 + owner) & 0xff);
  return v;
}

// Whether `owner`'s "v" and "w", read here, are its values.
bool ReadsRight(uint32_t owner, uint64_t bytes) {
  auto store = BuddyStore::Make("test");
  auto v = store.GetRemote<std::vector<uint8_t>>(Place{owner}, "v");
  auto w = store.GetRemote<uint32_t>(Place{owner}, "w");
  return v && *v == Pattern(bytes, owner) && w && *w == owner;
}

void Kill(uint32_t victim) {
  try {
    fox::apgas::finish([victim] {
      fox::apgas::asyncAt(Place{victim}, [] {
        std::printf("buddy_store: place %u dies now\n", fox::apgas::here().id);
        std::fflush(stdout);
        std::_Exit(9);
      });
    });
  } catch (const fox::apgas::MultipleExceptions& e) {
    CHECK(e.HasDeadPlace(Place{victim}), "%s", e.what());
  }
}

void Run(uint64_t bytes) {
  CHECK(fox::apgas::places().size() == 5, "5 places, not %zu", fox::apgas::places().size());
  fox::apgas::finish([bytes] {
    for (uint32_t p = 1; p <= 4; ++p) {
      fox::apgas::asyncAt(
          Place{p},
          [](uint64_t bytes) {
            uint32_t me = fox::apgas::here().id;
            auto store = BuddyStore::Make("test");
            BuddyStore::Write both;
            both.Put("v", Pattern(bytes, me));
            both.Put("w", me);
            store.Commit(std::move(both));
            BuddyStore::Stats before = BuddyStore::stats();
            CHECK(ReadsRight(me, bytes), "place %u read its own values wrong", me);
            BuddyStore::Stats after = BuddyStore::stats();
            CHECK(after.local_reads - before.local_reads == 2 && after.remote_reads == before.remote_reads,
                  "place %u read its own values with %" PRIu64 " local and %" PRIu64 " remote reads", me,
                  after.local_reads - before.local_reads, after.remote_reads - before.remote_reads);
          },
          bytes);
    }
  });
  for (uint32_t p = 1; p <= 4; ++p) CHECK(ReadsRight(p, bytes), "place 0 read place %u's values wrong", p);
  CHECK(BuddyStore::stats().remote_reads == 8, "place 0: %" PRIu64 " remote reads, not 8",
        BuddyStore::stats().remote_reads);
  std::printf("buddy_store: every place read its own values locally, place 0 every place's remotely\n");

  Kill(2);
  CHECK(ReadsRight(2, bytes), "place 0 read dead place 2's values wrong");
  CHECK(BuddyStore::stats().backup_reads == 2, "place 0: %" PRIu64 " backup reads, not 2",
        BuddyStore::stats().backup_reads);
  uint64_t moved = fox::apgas::at(Place{1}, [] { return BuddyStore::stats().rereplicated; });
  CHECK(moved == 2, "place 1 re-replicated %" PRIu64 " values after its buddy died, not 2", moved);
  std::printf("buddy_store: place 2 died: its values read from a backup; place 1's sent to a new buddy\n");

  Kill(3);  // it held place 2's backups; its own are at place 4, so are copies of place 2's
  for (uint32_t p : {1u, 2u, 3u})
    CHECK(ReadsRight(p, bytes), "after two deaths place 0 read place %u's values wrong", p);
  CHECK(fox::apgas::at(Place{4}, [bytes] { return ReadsRight(4, bytes); }), "place 4 read its own values wrong");
  std::printf("buddy_store: place 3 died too: both dead places' values read back whole: PASS\n");
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1 << 20;
  if (bytes == 0 || bytes > (uint64_t(128) << 20)) {
    std::printf("buddy_store: expected BYTES in 1..2^27\n");
    return 2;
  }
  return fox::apgas::Main(argc, argv, [bytes] { Run(bytes); });
}
