// apgas_node's shared helpers (common.h).
#include "common.h"

#include "fox/timer.h"

namespace apgas_node {

void SleepMs(uint64_t ms) { fox::timer::Sleep(ms * 1'000'000); }

void DieIn(uint64_t ms) {
  fox::timer::Start(ms * 1'000'000, [] {
    std::printf("apgas_node: place %u dies now\n", fox::apgas::here().id);
    std::fflush(stdout);
    std::_Exit(9);
  });
}

void Record(std::string line) {
  std::lock_guard<std::mutex> g(g_results_lock);
  g_results.push_back(std::move(line));
}

bool KillPlace(uint32_t victim) {
  try {
    fox::apgas::finish([&] {
      fox::apgas::asyncAt(Place{victim}, [] {
        std::printf("apgas_node: place %u dies now\n", fox::apgas::here().id);
        std::fflush(stdout);
        std::_Exit(9);
      });
    });
  } catch (const fox::apgas::MultipleExceptions& m) {
    return m.HasDeadPlace(Place{victim});
  }
  return false;
}

}  // namespace apgas_node
