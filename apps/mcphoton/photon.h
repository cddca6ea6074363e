// Monte Carlo photon transport in a turbid slab, as MCML (Wang, Jacques and
// Zheng, 1995) does it for one layer with matched boundaries: photon
// packets launched at the origin along +z, steps of exponential length,
// part of the weight absorbed at each interaction, Henyey-Greenstein
// scattering, Russian roulette below a weight threshold; a packet leaving
// through z = 0 counts as diffuse reflectance, through z = d as
// transmittance, each at its exit radius. mcphoton.cc runs batches of
// packets as dataflow tasks.
//
// Tallies are integers (weights in units of 2^-32), so that batches summed
// in any order give the same bits; every draw comes from the batch's seed
// alone, and the arithmetic is +, -, *, / and sqrt (correctly rounded
// everywhere) with a logarithm computed here, so a batch gives the same
// tallies on a node and on Linux, at any place, any number of times.
//
// Header-only, for the app and its unit test.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace fox::apps::photon {

struct Medium {
  double mua = 1, mus = 100, g = 0.9, thickness = 0.1;  // 1/cm, 1/cm, anisotropy, cm (MCML's sample)
  uint32_t nz = 20, nr = 25;                            // the grid: depth bins over the slab, radial bins
  double dr = 0.01;                                     // cm a radial bin
};

struct Tally {
  uint64_t photons = 0;
  std::vector<uint64_t> absorbed;     // nz * nr, by depth then radius
  std::vector<uint64_t> reflected;    // nr
  std::vector<uint64_t> transmitted;  // nr

  explicit Tally(const Medium& m = {}) : absorbed(size_t(m.nz) * m.nr), reflected(m.nr), transmitted(m.nr) {}
  void Add(const Tally& t) {
    photons += t.photons;
    for (size_t i = 0; i < absorbed.size() && i < t.absorbed.size(); ++i) absorbed[i] += t.absorbed[i];
    for (size_t i = 0; i < reflected.size() && i < t.reflected.size(); ++i) reflected[i] += t.reflected[i];
    for (size_t i = 0; i < transmitted.size() && i < t.transmitted.size(); ++i) transmitted[i] += t.transmitted[i];
  }
  static double Sum(const std::vector<uint64_t>& v) {
    uint64_t s = 0;
    for (uint64_t x : v) s += x;
    return double(s) / 4294967296.0;
  }
  // As bytes (little-endian words: photons, then the three arrays) and back.
  std::string Bytes() const {
    std::vector<uint64_t> words{photons};
    words.insert(words.end(), absorbed.begin(), absorbed.end());
    words.insert(words.end(), reflected.begin(), reflected.end());
    words.insert(words.end(), transmitted.begin(), transmitted.end());
    std::string out(words.size() * 8, '\0');
    std::memcpy(out.data(), words.data(), out.size());
    return out;
  }
  // False if `bytes` are not a tally of medium m's grid.
  bool FromBytes(const std::string& bytes) {
    size_t words = 1 + absorbed.size() + reflected.size() + transmitted.size();
    if (bytes.size() != words * 8) return false;
    const char* p = bytes.data();
    std::memcpy(&photons, p, 8);
    std::memcpy(absorbed.data(), p + 8, absorbed.size() * 8);
    std::memcpy(reflected.data(), p + 8 + absorbed.size() * 8, reflected.size() * 8);
    std::memcpy(transmitted.data(), p + 8 + (absorbed.size() + reflected.size()) * 8, transmitted.size() * 8);
    return true;
  }
  // FNV-1a over Bytes(): the answer's fingerprint.
  uint64_t Checksum() const {
    uint64_t h = 0xcbf29ce484222325ull;
    for (char c : Bytes()) h = (h ^ uint8_t(c)) * 0x100000001b3ull;
    return h;
  }
};

// ln(x) for x > 0 by +, *, / only: x = m 2^e with m in [sqrt(1/2),
// sqrt(2)), ln m = 2 atanh((m - 1) / (m + 1)) by its series.
inline double Log(double x) {
  uint64_t bits;
  std::memcpy(&bits, &x, 8);
  int e = int((bits >> 52) & 0x7ff) - 1023;
  bits = (bits & ((uint64_t(1) << 52) - 1)) | (uint64_t(1023) << 52);  // x's mantissa, in [1, 2)
  double m;
  std::memcpy(&m, &bits, 8);
  if (m > 1.4142135623730951) {
    m /= 2;
    ++e;
  }
  double z = (m - 1) / (m + 1), z2 = z * z, term = z, sum = 0;
  for (int k = 1; k < 40; k += 2) {
    sum += term / k;
    term *= z2;
  }
  return 2 * sum + e * 0.6931471805599453;
}

// SplitMix64: a batch's stream of draws.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double Open() { return double((Next() >> 11) + 1) * 0x1.0p-53; }  // (0, 1]
  double Unit() { return double(Next() >> 11) * 0x1.0p-53; }        // [0, 1)

 private:
  uint64_t state_;
};

inline uint64_t Fixed(double w) { return uint64_t(w * 4294967296.0); }

// Whether a medium can be simulated: positive, finite sizes, a grid of at
// most 2^16 cells, |g| < 1.
inline bool Valid(const Medium& m) {
  auto positive = [](double v) { return v > 0 && v < 1e300; };
  return m.mua >= 0 && m.mus >= 0 && positive(m.mua + m.mus) && positive(m.thickness) && positive(m.dr) && m.g > -1 &&
         m.g < 1 && m.nz > 0 && m.nr > 0 && uint64_t(m.nz) * m.nr <= (uint64_t(1) << 16);
}

// `photons` packets from `seed`, added to t (a tally of m's grid; m Valid).
inline void Simulate(const Medium& m, uint64_t photons, uint64_t seed, Tally* t) {
  constexpr double kThreshold = 1e-4, kChance = 0.1;
  Random rng(seed);
  const double mut = m.mua + m.mus, albedo = m.mus / mut, dz = m.thickness / m.nz;
  auto bin = [](double q, uint32_t bins) {  // the last bin gathers what lies beyond
    return q < double(bins) ? uint64_t(q) : uint64_t(bins - 1);
  };
  auto radial = [&](double x, double y) { return bin(std::sqrt(x * x + y * y) / m.dr, m.nr); };
  for (uint64_t n = 0; n < photons; ++n) {
    double x = 0, y = 0, z = 0, ux = 0, uy = 0, uz = 1, w = 1;
    while (true) {
      double s = -Log(rng.Open()) / mut;
      double zn = z + s * uz;
      if (zn <= 0 || zn >= m.thickness) {  // leaves the slab: where it crosses the boundary
        double edge = zn <= 0 ? 0 : m.thickness, to = (edge - z) / uz;
        uint64_t ir = radial(x + to * ux, y + to * uy);
        (zn <= 0 ? t->reflected : t->transmitted)[ir] += Fixed(w);
        break;
      }
      x += s * ux;
      y += s * uy;
      z = zn;
      double dw = w * (1 - albedo);
      t->absorbed[bin(z / dz, m.nz) * m.nr + radial(x, y)] += Fixed(dw);
      w -= dw;
      if (w < kThreshold) {  // roulette
        if (rng.Unit() >= kChance) break;
        w /= kChance;
      }
      // Henyey-Greenstein's polar angle; the azimuth as a point of the unit disc.
      double ct;
      if (m.g == 0) {
        ct = 2 * rng.Unit() - 1;
      } else {
        double f = (1 - m.g * m.g) / (1 - m.g + 2 * m.g * rng.Unit());
        ct = (1 + m.g * m.g - f * f) / (2 * m.g);
        ct = ct < -1 ? -1 : ct > 1 ? 1 : ct;
      }
      double st = std::sqrt(1 - ct * ct), px, py, r2;
      do {
        px = 2 * rng.Unit() - 1;
        py = 2 * rng.Unit() - 1;
        r2 = px * px + py * py;
      } while (r2 > 1 || r2 == 0);
      double r = std::sqrt(r2), cp = px / r, sp = py / r;
      if (1 - (uz < 0 ? -uz : uz) < 1e-12) {  // along z
        ux = st * cp;
        uy = st * sp;
        uz = uz > 0 ? ct : -ct;
      } else {
        double q = std::sqrt(1 - uz * uz);
        double nx = st * (ux * uz * cp - uy * sp) / q + ux * ct;
        double ny = st * (uy * uz * cp + ux * sp) / q + uy * ct;
        uz = -st * cp * q + uz * ct;
        ux = nx;
        uy = ny;
      }
    }
  }
  t->photons += photons;
}

}  // namespace fox::apps::photon
