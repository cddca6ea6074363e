// The membership protocol (net/membership.h) at 64, 256 and 1024 nodes in
// simulated time (tests/unit/membership_sim.h), with the rack defaults:
// what `make bench B=scale` prints beside the QEMU clusters' figures.
//
//   scale_sim [--quick]
//
// Per job size:
//   detect_s_N_median / _p99   from a node's death to each survivor's
//                              verdict (its own or the notice), over
//                              several deaths and every survivor
//   fd_msgs_per_node_s_N       membership messages sent per node per
//                              second in steady state (pings, acks,
//                              ping-reqs; notices excluded)
//   fp_per_hour_loss5_N        deaths of live nodes per hour with 5% of
//                              messages lost
//   fp_per_hour_pause_short_N  the same with every node paused now and
//                              then for up to 0.8 s (below the suspicion)
//   fp_per_hour_pause2s_N      ... for up to 2 s: nodes paused longer than
//                              a probe period plus the suspicion are
//                              declared dead (fail-stop), counted here
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "membership_sim.h"

namespace {

using fox::sim::MembershipSim;
using fox::sim::SimConfig;

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kS = 1000 * kMs;

struct Rng {
  uint64_t s;
  double Uniform() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return double((s * 0x2545F4914F6CDD1Dull) >> 11) / double(1ull << 53);
  }
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = size_t(p * double(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

uint64_t FdMessages(const MembershipSim& sim, int n) {
  uint64_t total = 0;
  for (int i = 0; i < n; ++i) {
    const auto& c = sim.node(i).counters();
    total += c.pings_sent + c.acks_sent + c.ping_reqs_sent;
  }
  return total;
}

// Distinct live members declared dead (a false death seen by many observers counts once).
int FalselyDeadMembers(const MembershipSim& sim, int nodes) {
  std::vector<bool> dead(size_t(nodes), false);
  for (const auto& v : sim.dead_views()) {
    if (!sim.Killed(v.member)) dead[size_t(v.member)] = true;
  }
  return int(std::count(dead.begin(), dead.end(), true));
}

void Detection(int n, int deaths, uint64_t seed) {
  std::vector<double> times;
  int missed = 0;
  for (int d = 0; d < deaths; ++d) {
    SimConfig c;
    c.nodes = n;
    c.seed = seed + uint64_t(d);
    MembershipSim sim(c);
    sim.RunUntil(5 * kS);
    int victim = int((seed * 7919 + uint64_t(d) * 104729) % uint64_t(n));
    uint64_t killed_at = sim.now();
    sim.Kill(victim);
    sim.RunUntil(killed_at + 20 * kS);
    int seen = 0;
    for (const auto& v : sim.dead_views()) {
      if (v.member != victim) continue;
      times.push_back(double(v.at_ns - killed_at) / 1e9);
      ++seen;
    }
    missed += (n - 1) - seen;
  }
  std::printf("scale.detect_s_%d_median %.3f s\n", n, Percentile(times, 0.5));
  std::printf("scale.detect_s_%d_p99 %.3f s\n", n, Percentile(times, 0.99));
  std::printf("scale.detect_missed_%d %d observers\n", n, missed);
}

void Steady(int n, uint64_t seconds, uint64_t seed) {
  SimConfig c;
  c.nodes = n;
  c.seed = seed;
  MembershipSim sim(c);
  sim.RunUntil(5 * kS);
  uint64_t before = FdMessages(sim, n);
  sim.RunUntil((5 + seconds) * kS);
  double per_node_s = double(FdMessages(sim, n) - before) / n / double(seconds);
  std::printf("scale.fd_msgs_per_node_s_%d %.2f msgs\n", n, per_node_s);
}

// Deaths per hour of live nodes over `seconds` of simulated time with
// `loss`, and each node paused every ~`pause_every_s` for up to `max_pause`.
void FalsePositives(const char* what, int n, uint64_t seconds, double loss, double pause_every_s, uint64_t max_pause,
                    uint64_t seed) {
  SimConfig c;
  c.nodes = n;
  c.seed = seed;
  c.loss = loss;
  MembershipSim sim(c);
  Rng rng{seed * 0x9E3779B97F4A7C15ull | 1};
  const uint64_t step = 100 * kMs;
  for (uint64_t t = step; t <= seconds * kS; t += step) {
    if (max_pause != 0) {
      double p = double(step) / 1e9 / pause_every_s;  // per node per step
      for (int i = 0; i < n; ++i) {
        if (rng.Uniform() < p) sim.Pause(i, uint64_t(rng.Uniform() * double(max_pause)));
      }
    }
    sim.RunUntil(t);
  }
  double hours = double(seconds) / 3600.0;
  std::printf("scale.fp_per_hour_%s_%d %.1f deaths\n", what, n, double(FalselyDeadMembers(sim, n)) / hours);
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  for (int n : {64, 256, 1024}) {
    Steady(n, quick ? 10 : 60, 11);
    Detection(n, quick ? 3 : (n >= 1024 ? 8 : 20), 100 + uint64_t(n));
    uint64_t fp_seconds = quick ? 30 : (n >= 1024 ? 300 : 600);
    FalsePositives("loss5", n, fp_seconds, 0.05, 0, 0, 21);
    FalsePositives("pause_short", n, fp_seconds, 0.01, 60, 800 * kMs, 22);
    FalsePositives("pause2s", n, fp_seconds, 0.01, 60, 2 * kS, 23);
    std::fflush(stdout);
  }
  return 0;
}
