// The phi accrual failure detector (Hayashibara et al., SRDS 2004; the FOX
// report used it): instead of a yes/no timeout it gives a suspicion level
// phi = -log10(P(a heartbeat arrives later than now)), computed from the
// recent distribution of heartbeat inter-arrival times. phi 1 means a 10%
// chance of being wrong when declaring the peer dead, phi 8 one in 10^8.
//
// The distribution is a normal one fitted to the last `window` intervals
// (mean, standard deviation), with two safeguards taken from practice:
// `min_stddev_ns` (a perfectly regular heartbeat would otherwise make a
// microsecond of jitter look fatal) and `acceptable_pause_ns` added to the
// mean (a pause that long — a retransmission, a busy emulator — is normal).
//
// Pure computation with time passed in: no allocation after construction,
// no locks; safe in interrupt context. One detector per peer.
#pragma once

#include <cstdint>

namespace fox::net {

struct PhiConfig {
  uint64_t first_interval_ns = 100'000'000;  // assumed interval before the first sample
  uint64_t min_stddev_ns = 50'000'000;
  uint64_t acceptable_pause_ns = 500'000'000;
};

class PhiAccrualDetector {
 public:
  static constexpr int kWindow = 64;  // intervals kept

  explicit PhiAccrualDetector(const PhiConfig& config = {}) : config_(config) {}

  // A heartbeat (any sign of life) arrived at `now_ns`. The first one starts
  // the clock; later ones add an interval sample.
  void Heartbeat(uint64_t now_ns);

  // The suspicion level at `now_ns`: 0 just after a heartbeat, growing while
  // none arrives. 0 before the first heartbeat (Start() arms it instead).
  double Phi(uint64_t now_ns) const;

  // Another sign of life that is not a heartbeat (any frame from the peer):
  // restarts the silence without adding an interval sample, so traffic that
  // delays heartbeats (they share the peer's reliable channel) does not make
  // a busy peer look dead. No effect before the first heartbeat.
  void Touch(uint64_t now_ns) {
    if (started_ && now_ns > last_ns_) last_ns_ = now_ns;
  }

  // Starts watching a peer that has not sent anything yet, as if a heartbeat
  // had arrived at `now_ns`: a peer that never speaks is suspected too.
  void Start(uint64_t now_ns);

  bool started() const { return started_; }
  uint64_t last_ns() const { return last_ns_; }
  int samples() const { return count_; }
  double mean_ns() const;
  double stddev_ns() const;

 private:
  void Add(double interval);

  PhiConfig config_;
  bool started_ = false;
  uint64_t last_ns_ = 0;
  double intervals_[kWindow] = {};
  int count_ = 0;   // samples held, <= kWindow
  int next_ = 0;    // where the next sample goes
  double sum_ = 0;  // of the samples held
  double sum_sq_ = 0;
};

// phi for a normal distribution: -log10(1 - CDF((elapsed - mean) / stddev)),
// with the logistic approximation of the CDF that keeps the tail finite and
// monotonic. Exposed for tests.
double PhiOf(double elapsed_ns, double mean_ns, double stddev_ns);

}  // namespace fox::net
