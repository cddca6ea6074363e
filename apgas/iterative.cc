// The iterative executors' parts that are not templates (iterative.h):
// fox.kill_at, Young's interval, rebuilding the group, topping up spares.
// No closure here (it would be a static initialiser in every image): the
// executors and KillDuring are templates in the header.
#include "fox/apgas/iterative.h"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "fox/boot_args.h"
#include "fox/clock.h"
#include "fox/ebb/messenger.h"
#include "fox/log.h"
#include "fox/timer.h"

namespace fox::apgas {
namespace detail {
namespace {

struct KillAt {
  uint32_t place;
  Phase phase;
  long n;
};

// fox.kill_at's entries (PLACE:PHASE:N, comma separated); a malformed
// entry is reported once and ignored.
std::vector<KillAt> ParseKillAt(const char* text) {
  std::vector<KillAt> out;
  if (text == nullptr) return out;
  std::string all(text);
  size_t at = 0;
  while (at <= all.size()) {
    size_t comma = all.find(',', at);
    std::string entry = all.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    at = comma == std::string::npos ? all.size() + 1 : comma + 1;
    char phase[16] = {};
    unsigned place = 0;
    long n = 0;
    int used = 0;
    bool ok = std::sscanf(entry.c_str(), "%u:%15[a-z]:%ld%n", &place, phase, &n, &used) == 3 &&
              size_t(used) == entry.size() && n >= 0;
    KillAt k{place, Phase::kStep, n};
    if (ok && std::strcmp(phase, "step") == 0) {
      k.phase = Phase::kStep;
    } else if (ok && std::strcmp(phase, "checkpoint") == 0) {
      k.phase = Phase::kCheckpoint;
    } else if (ok && std::strcmp(phase, "restore") == 0) {
      k.phase = Phase::kRestore;
    } else {
      LOG_WARN("apgas: fox.kill_at entry '%s' ignored: expected PLACE:step|checkpoint|restore:N", entry.c_str());
      continue;
    }
    out.push_back(k);
  }
  return out;
}

const std::vector<KillAt>& Kills() {
  static const std::vector<KillAt>* kills = new std::vector<KillAt>(ParseKillAt(BootArg("fox.kill_at")));
  return *kills;
}

const char* PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kStep: return "step";
    case Phase::kCheckpoint: return "checkpoint";
    case Phase::kRestore: return "restore";
  }
  return "?";
}

}  // namespace

uint64_t UnixNs() {
#ifndef FOX_NATIVE
  struct timespec t;
  if (clock_gettime(CLOCK_REALTIME, &t) == 0) return uint64_t(t.tv_sec) * 1'000'000'000 + uint64_t(t.tv_nsec);
#endif
  return 0;
}

void TraceStep(long steps) {
  if (uint64_t unix_ns = UnixNs()) std::printf("iterative: step %ld done at unix %.6f\n", steps, double(unix_ns) / 1e9);
}

// A place killed at a point has sent what it sent before it: between
// hosted places a large message is read out of the sender's memory
// (direct, fox/ebb/messenger.h), so the kill waits until its receivers
// have read them (at most kDieWaitNs: a receiver may be dead too), as
// fragments already sent would arrive.
constexpr uint64_t kDieWaitNs = 1'000'000'000;

[[noreturn]] void Die(Phase phase, long n) {
  for (uint64_t start = clock::NowNs();
       ebb::Messenger::Get()->UnreadDirectBytes() != 0 && clock::NowNs() - start < kDieWaitNs;) {
    timer::Sleep(100'000);
  }
  if (uint64_t unix_ns = UnixNs()) {
    std::printf("apgas: place %u dies in %s %ld (fox.kill_at) at unix %.6f\n", here().id, PhaseName(phase), n,
                double(unix_ns) / 1e9);
  } else {
    std::printf("apgas: place %u dies in %s %ld (fox.kill_at)\n", here().id, PhaseName(phase), n);
  }
  std::fflush(stdout);
  std::_Exit(9);
}

bool KillNamed(uint32_t place, Phase phase, long n) {
  for (const KillAt& k : Kills()) {
    if (k.place == place && k.phase == phase && k.n == n) return true;
  }
  return false;
}

void MaybeDie(Phase phase, long n) {
  if (KillNamed(here().id, phase, n)) Die(phase, n);
}

bool OnlyDeaths(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const DeadPlaceException&) {
    return true;
  } catch (const MultipleExceptions& m) {
    return !m.exceptions().empty() && m.DeadPlaces() == m.exceptions().size();
  } catch (...) {
    return false;
  }
}

void CountFailure(IterativeStats* stats, uint64_t start) {
  if (!OnlyDeaths(std::current_exception())) throw;
  ++stats->failures;
  stats->lost_ns += clock::NowNs() - start;
  stats->caught_unix_ns = UnixNs();
}

long YoungInterval(double checkpoint_s, double mtbf_s, double step_s) {
  if (!(step_s > 0) || !(checkpoint_s >= 0) || !(mtbf_s > 0)) return 1;
  double steps = std::sqrt(2 * checkpoint_s * mtbf_s) / step_s;
  if (!(steps >= 1)) return 1;
  return steps > 1e9 ? long(1e9) : long(steps);
}

PlaceManager::Change Rebuild(PlaceManager& manager, IterativeStats* stats) {
  uint64_t start = clock::NowNs();
  auto change = manager.rebuildActivePlaces();
  stats->rebuild_ns += clock::NowNs() - start;
  return change;
}

void TopUp(PlaceManager& manager, size_t used, const IterativeOptions& options, IterativeStats* stats) {
  static std::atomic<bool> said{false};
  if (!options.top_up_spares || used == 0) return;
  uint64_t start = clock::NowNs();
  try {
    auto added = manager.addPlaces(used, options.top_up_timeout_ms);
    stats->topped_up += long(added.size());
    if (added.size() < used) std::printf("apgas: %zu of %zu new spares came\n", added.size(), used);
  } catch (const std::runtime_error& e) {
    if (!said.exchange(true)) std::printf("apgas: spares not topped up: %s\n", e.what());
  }
  stats->top_up_ns += clock::NowNs() - start;
}

}  // namespace detail

}  // namespace fox::apgas
