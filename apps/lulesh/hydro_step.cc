// The three phases of a Domain's step (hydro.h): LULESH 2.0's
// TimeIncrement and LagrangeLeapFrog, cut at the exchanges.
//
// Design. The mesh is a regular lattice, so element (i, j, k) and its
// corners are found by arithmetic instead of connectivity lists, and each
// phase is one or two sweeps over the elements in index order (x fastest)
// that keep the per-element work in registers:
//   StartStep     a stress sweep, then an hourglass sweep. Each adds its
//                 corner forces to the nodes in element order, as LULESH's
//                 serial build does; two sweeps, not one, because a node's
//                 force is (stress sum) + hourglass terms one by one, and
//                 fusing them would change those sums' bits.
//   AdvanceNodes  the canonical shared-node sum (hydro.cc), one node sweep
//                 (acceleration, symmetry planes, velocity, position), and
//                 one element sweep (volume, characteristic length, strain
//                 rate, velocity gradients).
//   FinishStep    one element sweep: the q limiter and terms, the equation
//                 of state, the new volume and the time constraints. q's
//                 terms never leave registers, and LULESH's per-region
//                 temporaries are not needed (regions only repeat the EOS to
//                 add cost; they do not change a bit of the answer).
// Per element, every operation is LULESH's, in its order (hex.h,
// material.h). Nothing here allocates.
#include <cmath>

#include "cube_root.h"
#include "hydro.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

#include "hex.h"
#include "material.h"

namespace lulesh {
namespace {

using hex::Corners;
using hex::V3;
namespace m = material;

constexpr double kStopTime = 1.0e-2;

// The offsets of an element's 8 corners from its corner 0, in a lattice of
// n1 nodes per edge (hex.h's corner numbering).
struct CornerOffsets {
  int at[8];
  explicit CornerOffsets(int n1) {
    const int n2 = n1 * n1;
    const int offsets[8] = {0, 1, n1 + 1, n1, n2, n2 + 1, n2 + n1 + 1, n2 + n1};
    for (int c = 0; c < 8; ++c) at[c] = offsets[c];
  }
};

inline void Gather(const std::vector<V3>& field, int base, const CornerOffsets& corner, Corners& out) {
  for (int c = 0; c < 8; ++c) out[c] = field[base + corner.at[c]];
}

}  // namespace

bool Domain::Done() const { return !(time_ < kStopTime) || (iteration_cap_ != 0 && cycle_ >= iteration_cap_); }

// LULESH's TimeIncrement with the global constraints.
void Domain::AdvanceTime(const TimeConstraints& global) {
  constexpr double kGrowthFloor = 1.1, kGrowthCap = 1.2, kMaxIncrement = 1.0e-2;
  double target = kStopTime - time_;
  if (cycle_ != 0) {
    const double old_dt = deltatime_;
    double new_dt = 1.0e+20;
    if (global.courant < new_dt) new_dt = global.courant / 2.0;
    if (global.hydro < new_dt) new_dt = global.hydro * 2.0 / 3.0;
    const double ratio = new_dt / old_dt;
    if (ratio >= 1.0) {
      if (ratio < kGrowthFloor) {
        new_dt = old_dt;
      } else if (ratio > kGrowthCap) {
        new_dt = old_dt * kGrowthCap;
      }
    }
    if (new_dt > kMaxIncrement) new_dt = kMaxIncrement;
    deltatime_ = new_dt;
  }
  // Avoid a sliver of a last step.
  if (target > deltatime_ && target < 4.0 * deltatime_ / 3.0) target = 2.0 * deltatime_ / 3.0;
  if (target < deltatime_) deltatime_ = target;
  time_ += deltatime_;
  ++cycle_;
}

void Domain::StartStep(const TimeConstraints& global) {
  RequireStage(Stage::kReady, "StartStep");
  if (Done()) throw HydroError(Failure::kProtocol, "lulesh: StartStep after the run is done");
  AdvanceTime(global);
  for (V3& f : force_) f = {0.0, 0.0, 0.0};
  AccumulateStressForces();
  AccumulateHourglassForces();
  stage_ = Stage::kForces;
  ExpectImports(Exchange::kNodalForce);
}

// The pressure and q of each element pushed onto its corners through its
// area-weighted corner normals.
void Domain::AccumulateStressForces() {
  const CornerOffsets corner(nodes_per_edge_);
  int e = 0;
  for (int k = 0; k < size_; ++k) {
    for (int j = 0; j < size_; ++j) {
      for (int i = 0; i < size_; ++i, ++e) {
        const int base = NodeIndex(i, j, k);
        Corners p;
        Gather(position_, base, corner, p);
        if (hex::JacobianVolume(hex::ElementJacobian(p)) <= 0.0) Fail(Failure::kNegativeVolume, "inverted element");
        V3 normal[8];
        hex::CornerNormals(p, normal);
        const double stress = -pressure_[e] - q_[e];
        for (int c = 0; c < 8; ++c) {
          V3& f = force_[base + corner.at[c]];
          f.x += -(stress * normal[c].x);
          f.y += -(stress * normal[c].y);
          f.z += -(stress * normal[c].z);
        }
      }
    }
  }
}

void Domain::AccumulateHourglassForces() {
  const CornerOffsets corner(nodes_per_edge_);
  int e = 0;
  for (int k = 0; k < size_; ++k) {
    for (int j = 0; j < size_; ++j) {
      for (int i = 0; i < size_; ++i, ++e) {
        const int base = NodeIndex(i, j, k);
        if (volume_[e] <= 0.0) Fail(Failure::kNegativeVolume, "non-positive relative volume");
        Corners p, v;
        Gather(position_, base, corner, p);
        Gather(velocity_, base, corner, v);
        V3 dvol[8], hourglass[8];
        hex::VolumeDerivatives(p, dvol);
        const double volume = reference_volume_[e] * volume_[e];
        hex::HourglassForces(p, v, dvol, volume, CubeRoot(volume), sound_speed_[e], reference_volume_[e],
                             m::kHourglassCoefficient, hourglass);
        for (int c = 0; c < 8; ++c) {
          V3& f = force_[base + corner.at[c]];
          f.x += hourglass[c].x;
          f.y += hourglass[c].y;
          f.z += hourglass[c].z;
        }
      }
    }
  }
}

void Domain::AdvanceNodes() {
  RequireImports(Stage::kForces, "AdvanceNodes");
  SumSharedForces();
  MoveNodes();
  UpdateElementKinematics();
  stage_ = Stage::kGradients;
  ExpectImports(Exchange::kVelocityGradient);
}

// Acceleration from force and mass, none across the symmetry planes
// (x = 0, y = 0, z = 0), then velocity and position.
void Domain::MoveNodes() {
  const double dt = deltatime_;
  const bool symmetric[3] = {location_[0] == 0, location_[1] == 0, location_[2] == 0};
  auto advance = [dt](double& x, double& v, double force, double mass, bool fixed) {
    double a = force / mass;
    if (fixed) a = 0.0;
    double v_new = v + a * dt;
    if (std::fabs(v_new) < m::kVelocityCut) v_new = 0.0;
    v = v_new;
    x += v * dt;
  };
  int node = 0;
  for (int k = 0; k < nodes_per_edge_; ++k) {
    for (int j = 0; j < nodes_per_edge_; ++j) {
      for (int i = 0; i < nodes_per_edge_; ++i, ++node) {
        V3 &x = position_[node], &v = velocity_[node];
        const V3& f = force_[node];
        advance(x.x, v.x, f.x, mass_[node], symmetric[0] && i == 0);
        advance(x.y, v.y, f.y, mass_[node], symmetric[1] && j == 0);
        advance(x.z, v.z, f.z, mass_[node], symmetric[2] && k == 0);
      }
    }
  }
}

// Each element's new relative volume and its change, characteristic
// length, volumetric strain rate (at the half step's positions) and the
// monotonic q's gradients.
void Domain::UpdateElementKinematics() {
  const CornerOffsets corner(nodes_per_edge_);
  const double half_dt = 0.5 * deltatime_;
  int e = 0;
  for (int k = 0; k < size_; ++k) {
    for (int j = 0; j < size_; ++j) {
      for (int i = 0; i < size_; ++i, ++e) {
        const int base = NodeIndex(i, j, k);
        Corners p, v, half;
        Gather(position_, base, corner, p);
        Gather(velocity_, base, corner, v);
        const double volume = hex::Volume(p);
        const double relative = volume / reference_volume_[e];
        new_volume_[e] = relative;
        delta_volume_[e] = relative - volume_[e];
        char_length_[e] = hex::CharacteristicLength(p, volume);
        for (int c = 0; c < 8; ++c) half[c] = p[c] - half_dt * v[c];
        V3 grad[8];
        double determinant;
        hex::ShapeDerivatives(half, grad, &determinant);
        vdov_[e] = hex::VolumeStrainRate(v, grad, determinant);
        if (relative <= 0.0) Fail(Failure::kNegativeVolume, "inverted element");
        const hex::AxisGradients g = hex::MonotonicQGradients(p, v, reference_volume_[e] * relative);
        for (int a = 0; a < 3; ++a) {
          delx_[a][e] = g.delx[a];
          delv_[a][e] = g.delv[a];
        }
      }
    }
  }
}

// The velocity gradient along `axis` of the element beyond `element`'s
// face on `side` (-1 or +1): a local element, a neighbour's (imported), or
// the boundary's rule: symmetry (the element's own) on the minus side, a
// free surface (zero) on the plus side.
double Domain::NeighbourGradient(int axis, int side, const int at[3], int element) const {
  const int stride = axis == 0 ? 1 : axis == 1 ? size_ : size_ * size_;
  const std::vector<double>& delv = delv_[axis];
  if (side < 0) {
    if (at[axis] > 0) return delv[element - stride];
    if (location_[axis] == 0) return delv[element];
  } else {
    if (at[axis] < size_ - 1) return delv[element + stride];
    if (location_[axis] == domains_ - 1) return 0.0;
  }
  // From the face neighbour: its layer along the face, x fastest.
  const int u = axis == 0 ? at[1] : at[0];
  const int w = axis == 2 ? at[1] : at[2];
  const int direction = Direction(axis == 0 ? side : 0, axis == 1 ? side : 0, axis == 2 ? side : 0);
  return inbox_[direction][u + size_ * w];
}

TimeConstraints Domain::FinishStep() {
  RequireImports(Stage::kGradients, "FinishStep");
  constexpr double kCourantQ2 = 64.0 * m::kCourantQCoefficient * m::kCourantQCoefficient;
  TimeConstraints limits;
  int e = 0;
  for (int k = 0; k < size_; ++k) {
    for (int j = 0; j < size_; ++j) {
      for (int i = 0; i < size_; ++i, ++e) {
        // Artificial viscosity: limited velocity gradients per axis.
        const int at[3] = {i, j, k};
        double phi[3], delv[3], delx[3];
        for (int a = 0; a < 3; ++a) {
          delv[a] = delv_[a][e];
          delx[a] = delx_[a][e];
          phi[a] = m::Limiter(delv[a], NeighbourGradient(a, -1, at, e), NeighbourGradient(a, +1, at, e));
        }
        const double mass = reference_volume_[e];
        const double density = mass / (reference_volume_[e] * new_volume_[e]);
        const m::QTerms q_terms = m::MonotonicQ(vdov_[e], delv, delx, phi, density);
        if (q_[e] > m::kQStop) Fail(Failure::kExcessiveQ, "artificial viscosity above its stop value");

        // Equation of state on the volume bounded to the EOS's range.
        double v_new = new_volume_[e];
        if (v_new < m::kEosVolumeMin) v_new = m::kEosVolumeMin;
        if (v_new > m::kEosVolumeMax) v_new = m::kEosVolumeMax;
        double v_old = volume_[e];
        if (v_old < m::kEosVolumeMin) v_old = m::kEosVolumeMin;
        if (v_old > m::kEosVolumeMax) v_old = m::kEosVolumeMax;
        if (v_old <= 0.0) Fail(Failure::kNegativeVolume, "non-positive relative volume");
        const m::EosResult r = m::EvaluateEos(energy_[e], pressure_[e], q_[e], q_terms, delta_volume_[e], v_new);
        energy_[e] = r.energy;
        pressure_[e] = r.pressure;
        q_[e] = r.q;
        sound_speed_[e] = r.sound_speed;
        double volume = new_volume_[e];
        if (std::fabs(volume - 1.0) < m::kVolumeCut) volume = 1.0;
        volume_[e] = volume;

        // Time constraints: Courant (sound and q) and volume change.
        const double vdov = vdov_[e];
        if (vdov != 0.0) {
          const double length = char_length_[e];
          double dtf = r.sound_speed * r.sound_speed;
          if (vdov < 0.0) dtf = dtf + kCourantQ2 * length * length * vdov * vdov;
          dtf = length / std::sqrt(dtf);
          if (dtf < limits.courant) limits.courant = dtf;
          const double dt_volume = m::kMaxVolumeChange / (std::fabs(vdov) + 1.e-20);
          if (limits.hydro > dt_volume) limits.hydro = dt_volume;
        }
      }
    }
  }
  constraints_ = limits;
  stage_ = Stage::kReady;
  return limits;
}

}  // namespace lulesh
