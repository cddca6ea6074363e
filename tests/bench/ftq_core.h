// FTQ (fixed time quantum): count units of fixed work completed in each of
// many equal time quanta. A perfectly quiet core completes the same count in
// every quantum; interrupts and other noise show up as dips. Shared by the
// fox image and the Linux process so both run the same loop.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace ftq {

struct Result {
  double mean, stddev, cov, min, max;
};

// `now` returns nanoseconds. Each unit is a short dependent-arithmetic loop.
// The first quanta/10 quanta warm up (caches, emulator translation) and are
// not reported.
template <typename Now>
std::vector<uint64_t> Run(Now now, uint64_t quantum_ns, int quanta) {
  int warmup = quanta / 10;
  quanta += warmup;
  std::vector<uint64_t> counts(quanta);
  volatile uint64_t sink = 0;
  uint64_t next = now() + quantum_ns;
  for (int q = 0; q < quanta; ++q) {
    uint64_t units = 0;
    uint64_t x = q;
    while (now() < next) {
      for (int i = 0; i < 64; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
      ++units;
    }
    sink = sink + x;
    counts[q] = units;
    next += quantum_ns;
  }
  counts.erase(counts.begin(), counts.begin() + warmup);
  return counts;
}

inline Result Summarize(const std::vector<uint64_t>& counts) {
  double sum = 0, sq = 0, mn = 1e300, mx = 0;
  for (uint64_t c : counts) {
    sum += double(c);
    mn = c < mn ? double(c) : mn;
    mx = c > mx ? double(c) : mx;
  }
  double mean = sum / double(counts.size());
  for (uint64_t c : counts) sq += (double(c) - mean) * (double(c) - mean);
  double sd = std::sqrt(sq / double(counts.size()));
  return Result{mean, sd, mean > 0 ? sd / mean : 0, mn, mx};
}

}  // namespace ftq
