// The element-local material physics of LULESH 2.0's Sedov problem: the
// monotonic artificial viscosity (q) limiter and the ideal-gas equation of
// state with its predictor-corrector energy update (LLNL-TR-641973,
// sections 5 and 6). One element at a time, no neighbour data beyond the
// velocity gradients the caller passes in.
//
// Pure, inline and allocation-free. As in hex.h, the order of every
// floating-point operation is part of the contract (left-to-right sums, no
// fused multiply-adds): an includer turns contraction off first.
#pragma once

#include <cmath>

namespace lulesh::material {

// The problem's constants (LULESH's defaults, which its command line does
// not change).
inline constexpr double kEnergyCut = 1.0e-7;
inline constexpr double kPressureCut = 1.0e-7;
inline constexpr double kQCut = 1.0e-7;
inline constexpr double kVolumeCut = 1.0e-10;
inline constexpr double kVelocityCut = 1.0e-7;
inline constexpr double kHourglassCoefficient = 3.0;
inline constexpr double kQStop = 1.0e+12;
inline constexpr double kMonoQMaxSlope = 1.0;
inline constexpr double kMonoQLimiterMult = 2.0;
inline constexpr double kQLinearCoefficient = 0.5;
inline constexpr double kQQuadraticCoefficient = 2.0 / 3.0;
inline constexpr double kCourantQCoefficient = 2.0;
inline constexpr double kEosVolumeMax = 1.0e+9;
inline constexpr double kEosVolumeMin = 1.0e-9;
inline constexpr double kPressureMin = 0.0;
inline constexpr double kEnergyMin = -1.0e+15;
inline constexpr double kMaxVolumeChange = 0.1;
inline constexpr double kReferenceDensity = 1.0;

// The slope limiter of one logical axis: phi in [0, max slope] from the
// element's own velocity gradient and those of its two neighbours along
// the axis (already replaced by the boundary's rule where there is none).
inline double Limiter(double own, double minus, double plus) {
  constexpr double kTiny = 1.e-36;
  const double norm = 1.0 / (own + kTiny);
  minus = minus * norm;
  plus = plus * norm;
  double phi = 0.5 * (minus + plus);
  minus *= kMonoQLimiterMult;
  plus *= kMonoQLimiterMult;
  if (minus < phi) phi = minus;
  if (plus < phi) phi = plus;
  if (phi < 0.0) phi = 0.0;
  if (phi > kMonoQMaxSlope) phi = kMonoQMaxSlope;
  return phi;
}

// The linear and quadratic parts of q.
struct QTerms {
  double linear = 0.0;
  double quadratic = 0.0;
};

// q's terms for an element in compression (vdov <= 0; zero otherwise) from
// its per-axis velocity differences delv, thicknesses delx, limiters phi,
// and its density.
inline QTerms MonotonicQ(double vdov, const double delv[3], const double delx[3], const double phi[3], double density) {
  if (vdov > 0.0) return {};
  double dv[3];
  for (int a = 0; a < 3; ++a) {
    dv[a] = delv[a] * delx[a];
    if (dv[a] > 0.0) dv[a] = 0.0;
  }
  QTerms q;
  q.linear =
      -kQLinearCoefficient * density * (dv[0] * (1.0 - phi[0]) + dv[1] * (1.0 - phi[1]) + dv[2] * (1.0 - phi[2]));
  q.quadratic = kQQuadraticCoefficient * density *
                (dv[0] * dv[0] * (1.0 - phi[0] * phi[0]) + dv[1] * dv[1] * (1.0 - phi[1] * phi[1]) +
                 dv[2] * dv[2] * (1.0 - phi[2] * phi[2]));
  return q;
}

// The state an element's equation of state produces.
struct EosResult {
  double energy, pressure, q, sound_speed;
};

namespace detail {

// Pressure from the EOS coefficient bvc and energy, with the cut-offs.
inline double Pressure(double bvc, double energy, double volume) {
  double p = bvc * energy;
  if (std::fabs(p) < kPressureCut) p = 0.0;
  if (volume >= kEosVolumeMax) p = 0.0;
  if (p < kPressureMin) p = kPressureMin;
  return p;
}

// A sound speed from its square's numerator, floored.
inline double SoundSpeed(double pbvc, double energy, double volume_factor, double bvc, double pressure) {
  double ssc = (pbvc * energy + volume_factor * volume_factor * bvc * pressure) / kReferenceDensity;
  return ssc <= .1111111e-36 ? .3333333e-18 : std::sqrt(ssc);
}

}  // namespace detail

// The equation of state for one element over one step: from its energy,
// pressure and q at the start of the step, q's terms, its volume change
// delv and its new relative volume (clamped to [kEosVolumeMin,
// kEosVolumeMax] by the caller), the energy, pressure, q and sound speed at
// the end of the step.
inline EosResult EvaluateEos(double e_old, double p_old, double q_old, QTerms q_terms, double delv, double v_new) {
  using detail::Pressure;
  using detail::SoundSpeed;
  constexpr double kC1s = 2.0 / 3.0;  // d(pressure)/d(energy) per unit compression
  constexpr double kSixth = 1.0 / 6.0;
  constexpr double kWork = 0.0;  // no external work in this problem
  double compression = 1.0 / v_new - 1.0;
  double v_half = v_new - delv * 0.5;
  double compression_half = 1.0 / v_half - 1.0;
  if (v_new <= kEosVolumeMin) compression_half = compression;
  if (v_new >= kEosVolumeMax) {
    p_old = 0.0;
    compression = 0.0;
    compression_half = 0.0;
  }

  // Predict the energy at the half step.
  double e_new = e_old - 0.5 * delv * (p_old + q_old) + 0.5 * kWork;
  if (e_new < kEnergyMin) e_new = kEnergyMin;
  const double pbvc = kC1s;
  double bvc = kC1s * (compression_half + 1.0);
  const double p_half = Pressure(bvc, e_new, v_new);
  const double v_half_step = 1.0 / (1.0 + compression_half);
  double q_new = 0.0;
  if (!(delv > 0.0)) {
    q_new = SoundSpeed(pbvc, e_new, v_half_step, bvc, p_half) * q_terms.linear + q_terms.quadratic;
  }

  // Correct it to the full step.
  e_new = e_new + 0.5 * delv * (3.0 * (p_old + q_old) - 4.0 * (p_half + q_new));
  e_new += 0.5 * kWork;
  if (std::fabs(e_new) < kEnergyCut) e_new = 0.0;
  if (e_new < kEnergyMin) e_new = kEnergyMin;
  bvc = kC1s * (compression + 1.0);
  double p_new = Pressure(bvc, e_new, v_new);
  double q_tilde = 0.0;
  if (!(delv > 0.0)) q_tilde = SoundSpeed(pbvc, e_new, v_new, bvc, p_new) * q_terms.linear + q_terms.quadratic;
  e_new = e_new - (7.0 * (p_old + q_old) - 8.0 * (p_half + q_new) + (p_new + q_tilde)) * delv * kSixth;
  if (std::fabs(e_new) < kEnergyCut) e_new = 0.0;
  if (e_new < kEnergyMin) e_new = kEnergyMin;
  p_new = Pressure(bvc, e_new, v_new);
  if (delv <= 0.0) {
    q_new = SoundSpeed(pbvc, e_new, v_new, bvc, p_new) * q_terms.linear + q_terms.quadratic;
    if (std::fabs(q_new) < kQCut) q_new = 0.0;
  }
  return {e_new, p_new, q_new, SoundSpeed(pbvc, e_new, v_new, bvc, p_new)};
}

}  // namespace lulesh::material
