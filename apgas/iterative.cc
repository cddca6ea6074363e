// The iterative executors' parts that are not templates (iterative.h):
// the global executor, fox.kill_at, Young's interval.
#include "fox/apgas/iterative.h"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fox/boot_args.h"
#include "fox/log.h"

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

[[noreturn]] void Die(Phase phase, long n) {
  std::printf("apgas: place %u dies in %s %ld (fox.kill_at)\n", here().id, PhaseName(phase), n);
  std::fflush(stdout);
  std::_Exit(9);
}

bool Named(uint32_t place, Phase phase, long n) {
  for (const KillAt& k : Kills()) {
    if (k.place == place && k.phase == phase && k.n == n) return true;
  }
  return false;
}

}  // namespace

void MaybeDie(Phase phase, long n) {
  if (Named(here().id, phase, n)) Die(phase, n);
}

void KillDuring(const std::vector<Place>& group, Phase phase, long n) {
  for (Place p : group) {
    if (p == here() || !Named(p.id, phase, n)) continue;  // place 0 never dies
    asyncAt(
        p, [](Phase phase, long n) { Die(phase, n); }, phase, n);
  }
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

void GlobalExecutor::run(IterativeApp& app) {
  using detail::Phase;
  long step = 0, restores = 0;
  long interval = options_.checkpoint_every > 0 ? options_.checkpoint_every : 1;
  long since = interval;  // a checkpoint before the first step
  bool recover = false;
  for (;;) {
    uint64_t start = clock::NowNs();
    PlaceManager::Change change;
    if (recover) change = detail::Rebuild(manager_, &stats_);  // its DeadPlaceException ends run
    size_t used = change.added.size();
    PlaceGroup group = manager_.activePlaces();
    std::vector<Place> members(group.begin(), group.end());
    try {
      if (recover) {
        uint64_t t = clock::NowNs();
        app.remake(group, change);
        stats_.remake_ns += clock::NowNs() - t;
        recover = false;
        step = 0;
        since = interval;
        if (const auto& last = checkpoints_.last()) {
          ++restores;
          ++stats_.restores;
          t = clock::NowNs();
          finish([&] {
            detail::KillDuring(members, Phase::kRestore, restores);
            app.restore(*last);
          });
          stats_.restore_ns += clock::NowNs() - t;
          step = last->step();
          since = 0;
        }
        detail::TopUp(manager_, used, options_, &stats_);
        continue;
      }
      if (app.isFinished()) return;
      if (since >= interval) {
        Snapshot s = checkpoints_.Begin(step, members);
        finish([&] {
          detail::KillDuring(members, Phase::kCheckpoint, step);
          app.checkpoint(s);
        });
        checkpoints_.Commit(s);
        uint64_t took = clock::NowNs() - start;
        ++stats_.checkpoints;
        stats_.checkpoint_ns += took;
        if (options_.checkpoint_every == 0) {
          double step_s = stats_.steps ? double(stats_.step_ns) / 1e9 / double(stats_.steps) : 0;
          interval = detail::YoungInterval(double(took) / 1e9, options_.mtbf_s, step_s);
        }
        stats_.interval = interval;
        since = 0;
        start = clock::NowNs();
      }
      finish([&] {
        detail::KillDuring(members, Phase::kStep, step);
        app.step();
      });
      ++stats_.steps;
      stats_.step_ns += clock::NowNs() - start;
      ++step;
      ++since;
    } catch (...) {
      if (!detail::OnlyDeaths(std::current_exception())) throw;
      ++stats_.failures;
      stats_.lost_ns += clock::NowNs() - start;
      recover = true;
    }
  }
}

}  // namespace fox::apgas
