// apgas_node step balance,MS: work stealing between a place's activity
// cores.
#include <atomic>
#include <string>
#include <vector>

#include "fox/clock.h"
#include "fox/core.h"
#include "fox/event.h"

#include "common.h"

namespace apgas_node {

// Work stealing between a place's activity cores (apgas/runtime.cc Launch):
// rounds of `cores` activities, the first of each spinning `ms` ms, the rest
// returning at once. Spawned round-robin, the long ones all land on one core;
// idle cores take them from there (balanced: they ran on 2 cores or more),
// so they end in about ceil(4 / cores) rounds, not 4. Returns "LONG_CORES CORES ELAPSED_MS STEALS".
std::string BalanceHere(uint64_t ms) {
  int online = fox::core::Online();
  int cores = fox::apgas::activityCores();
  auto steals = [online] {
    uint64_t n = 0;
    for (int c = 0; c < online; ++c) n += fox::event::GetStats(c).steals;
    return n;
  };
  std::vector<std::atomic<int>> long_on(online);
  uint64_t steals0 = steals();
  uint64_t start = fox::clock::NowNs();
  fox::apgas::finish([&] {
    for (int round = 0; round < 4; ++round) {
      fox::apgas::async([&long_on, ms] {
        uint64_t until = fox::clock::NowNs() + ms * 1'000'000;
        while (fox::clock::NowNs() < until) {
        }
        long_on[fox::core::Current()].fetch_add(1);
      });
      for (int i = 1; i < cores; ++i) fox::apgas::async([] {});
    }
  });
  uint64_t elapsed = (fox::clock::NowNs() - start) / 1'000'000;
  int used = 0;
  for (auto& n : long_on) used += n.load() != 0;
  char out[96];
  std::snprintf(out, sizeof out, "%d %d %llu %llu", used, cores, (unsigned long long)elapsed,
                (unsigned long long)(steals() - steals0));
  return out;
}

void Balance(uint64_t ms) {
  auto places = fox::apgas::places();
  int balanced = 0;
  for (Place p : places) {
    std::string r = fox::apgas::at(p, [ms] { return BalanceHere(ms); });
    int used = 0, cores = 0;
    unsigned long long elapsed = 0, stolen = 0;
    CHECK(std::sscanf(r.c_str(), "%d %d %llu %llu", &used, &cores, &elapsed, &stolen) == 4);
    std::printf(
        "apgas: place %u: 4 activities of %llu ms (each first of a round of %d) ran on %d of %d activity cores "
        "in %llu ms (one core: %llu ms), %llu steals\n",
        p.id, (unsigned long long)ms, cores, used, cores, elapsed, (unsigned long long)(4 * ms), stolen);
    if (cores >= 2 && used >= 2) ++balanced;  // the time is printed, not checked (loaded hosts)
  }
  std::printf("apgas: work stealing: balanced at %d of %zu places\n", balanced, places.size());
}

}  // namespace apgas_node
