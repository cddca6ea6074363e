// The phi accrual failure detector (phi_detector.h).
#include "fox/net/phi_detector.h"

#include <cmath>

namespace fox::net {

double PhiOf(double elapsed_ns, double mean_ns, double stddev_ns) {
  if (stddev_ns <= 0) stddev_ns = 1;
  double y = (elapsed_ns - mean_ns) / stddev_ns;
  // 1 - CDF(y) ~ e / (1 + e), e = exp(-y (1.5976 + 0.070566 y^2)) (Bowling et
  // al.'s logistic approximation of the normal CDF, error < 1.4e-4).
  double e = std::exp(-y * (1.5976 + 0.070566 * y * y));
  if (elapsed_ns > mean_ns) {
    // Large y: e -> 0, 1 - CDF ~ e; use log10(e) directly to stay finite.
    if (e < 1e-300) return -(-y * (1.5976 + 0.070566 * y * y)) / std::log(10.0);
    return -std::log10(e / (1.0 + e));
  }
  return -std::log10(1.0 - 1.0 / (1.0 + e));
}

void PhiAccrualDetector::Start(uint64_t now_ns) {
  if (started_) return;
  started_ = true;
  last_ns_ = now_ns;
}

void PhiAccrualDetector::Heartbeat(uint64_t now_ns) {
  if (!started_) {
    Start(now_ns);
    return;
  }
  if (now_ns < last_ns_) return;  // a Touch came later; nothing to sample
  Add(double(now_ns - last_ns_));
  last_ns_ = now_ns;
}

void PhiAccrualDetector::Add(double interval) {
  if (count_ == kWindow) {
    double old = intervals_[next_];
    sum_ -= old;
    sum_sq_ -= old * old;
  } else {
    ++count_;
  }
  intervals_[next_] = interval;
  next_ = (next_ + 1) % kWindow;
  sum_ += interval;
  sum_sq_ += interval * interval;
}

double PhiAccrualDetector::mean_ns() const {
  if (count_ == 0) return double(config_.first_interval_ns);
  return sum_ / count_;
}

double PhiAccrualDetector::stddev_ns() const {
  double sd = 0;
  if (count_ > 1) {
    double m = sum_ / count_;
    double var = sum_sq_ / count_ - m * m;
    sd = var > 0 ? std::sqrt(var) : 0;
  } else {
    sd = double(config_.first_interval_ns) / 4;
  }
  return sd < double(config_.min_stddev_ns) ? double(config_.min_stddev_ns) : sd;
}

double PhiAccrualDetector::Phi(uint64_t now_ns) const {
  if (!started_ || now_ns <= last_ns_) return 0;
  double elapsed = double(now_ns - last_ns_);
  return PhiOf(elapsed, mean_ns() + double(config_.acceptable_pause_ns), stddev_ns());
}

}  // namespace fox::net
