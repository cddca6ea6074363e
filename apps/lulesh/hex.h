// The geometry of one hexahedral element, as LULESH 2.0's Lagrange step
// uses it (LLNL-TR-641973, sections 2-4): its volume, the derivatives of
// its shape functions, the area-weighted normals at its corners, the
// derivative of its volume by each corner, its Flanagan-Belytschko
// hourglass forces, its characteristic length and the velocity gradients
// the monotonic artificial viscosity limits.
//
// Every function here is pure, inline and allocation-free: the step's
// element loops (hydro_step.cc) call them once per element. The order of
// each floating-point operation is part of the contract: the reference
// implementation's answer is reproduced bit for bit only if sums are
// associated as written here (left to right) and no multiply-add is fused,
// so a file that includes this header turns contraction off before it
// (see hydro_step.cc).
//
// Corner numbering: corners 0-3 are the element's lower face (z minimum)
// counter-clockwise from the origin corner (0: x-,y-; 1: x+,y-; 2: x+,y+;
// 3: x-,y+), and corner c+4 lies above corner c.
#pragma once

#include <cmath>

#include "vec3.h"

namespace lulesh::hex {

inline V3 operator+(V3 a, V3 b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
inline V3 operator-(V3 a, V3 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
inline V3 operator-(V3 a) { return {-a.x, -a.y, -a.z}; }
inline V3 operator*(double s, V3 a) { return {s * a.x, s * a.y, s * a.z}; }
inline double Dot(V3 a, V3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
inline V3 Cross(V3 a, V3 b) { return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x}; }

// Eight corners of one element (positions or velocities).
using Corners = V3[8];

// The element's volume: three triple products of its diagonals.
inline double Volume(const Corners& p) {
  auto d = [&](int a, int b) { return p[a] - p[b]; };
  double sum = Dot(d(3, 1) + d(7, 2), Cross(d(6, 3), d(2, 0))) + Dot(d(4, 3) + d(5, 7), Cross(d(6, 4), d(7, 0))) +
               Dot(d(1, 4) + d(2, 5), Cross(d(6, 1), d(5, 0)));
  return sum * (1.0 / 12.0);
}

// The Jacobian's columns (derivatives of position along the element's
// three logical axes xi, eta, zeta), each scaled by 1/8.
struct Jacobian {
  V3 xi, eta, zeta;
};

inline Jacobian ElementJacobian(const Corners& p) {
  V3 d60 = p[6] - p[0], d53 = p[5] - p[3], d71 = p[7] - p[1], d42 = p[4] - p[2];
  return {0.125 * (d60 + d53 - d71 - d42), 0.125 * (d60 - d53 + d71 - d42), 0.125 * (d60 + d53 + d71 + d42)};
}

// The Jacobian determinant (the element's volume, as the shape-function
// derivatives see it).
inline double JacobianVolume(const Jacobian& j) { return 8.0 * Dot(j.eta, Cross(j.zeta, j.xi)); }

// The shape-function derivatives at each corner (grad[c] = dN_c/dx) and the
// Jacobian determinant (into *volume).
inline void ShapeDerivatives(const Corners& p, V3 grad[8], double* volume) {
  Jacobian j = ElementJacobian(p);
  V3 c_xi = Cross(j.eta, j.zeta), c_eta = Cross(j.zeta, j.xi), c_zeta = Cross(j.xi, j.eta);
  grad[0] = -c_xi - c_eta - c_zeta;
  grad[1] = c_xi - c_eta - c_zeta;
  grad[2] = c_xi + c_eta - c_zeta;
  grad[3] = -c_xi + c_eta - c_zeta;
  grad[4] = -grad[2];
  grad[5] = -grad[3];
  grad[6] = -grad[0];
  grad[7] = -grad[1];
  *volume = 8.0 * Dot(j.eta, c_eta);
}

// Each corner's share of the area-weighted normals of the three faces that
// meet there: a quarter of each face's area vector goes to its four corners.
inline void CornerNormals(const Corners& p, V3 normal[8]) {
  static constexpr int kFaces[6][4] = {{0, 1, 2, 3}, {0, 4, 5, 1}, {1, 5, 6, 2},
                                       {2, 6, 7, 3}, {3, 7, 4, 0}, {4, 7, 6, 5}};
  for (int c = 0; c < 8; ++c) normal[c] = {0.0, 0.0, 0.0};
  for (const auto& f : kFaces) {
    V3 a = p[f[0]], b = p[f[1]], c = p[f[2]], d = p[f[3]];
    V3 bisect0 = 0.5 * (d + c - b - a);
    V3 bisect1 = 0.5 * (c + b - d - a);
    V3 area = 0.25 * Cross(bisect0, bisect1);
    for (int k = 0; k < 4; ++k) normal[f[k]] = normal[f[k]] + area;
  }
}

// The derivative of the element's volume by the position of each corner.
inline void VolumeDerivatives(const Corners& p, V3 dvol[8]) {
  // For corner c: its three edge neighbours (in the face-walk order the
  // formula wants) and the three corners opposite them on the far faces.
  static constexpr int kStencil[8][6] = {{1, 2, 3, 4, 5, 7}, {2, 3, 0, 5, 6, 4}, {3, 0, 1, 6, 7, 5},
                                         {0, 1, 2, 7, 4, 6}, {7, 6, 5, 0, 3, 1}, {4, 7, 6, 1, 0, 2},
                                         {5, 4, 7, 2, 1, 3}, {6, 5, 4, 3, 2, 0}};
  // One component's term from the two other coordinates a and b.
  auto term = [](const double a[6], const double b[6]) {
    return (a[1] + a[2]) * (b[0] + b[1]) - (a[0] + a[1]) * (b[1] + b[2]) + (a[0] + a[4]) * (b[3] + b[4]) -
           (a[3] + a[4]) * (b[0] + b[4]) - (a[2] + a[5]) * (b[3] + b[5]) + (a[3] + a[5]) * (b[2] + b[5]);
  };
  constexpr double kTwelfth = 1.0 / 12.0;
  for (int c = 0; c < 8; ++c) {
    double x[6], y[6], z[6];
    for (int k = 0; k < 6; ++k) {
      x[k] = p[kStencil[c][k]].x;
      y[k] = p[kStencil[c][k]].y;
      z[k] = p[kStencil[c][k]].z;
    }
    dvol[c] = {term(y, z) * kTwelfth, -term(x, z) * kTwelfth, -term(y, x) * kTwelfth};
  }
}

// The four hourglass base vectors (LLNL-TR-641973 eq. 4.11).
inline constexpr double kHourglassBase[4][8] = {{1., 1., -1., -1., -1., -1., 1., 1.},
                                                {1., -1., -1., 1., -1., 1., 1., -1.},
                                                {1., -1., 1., -1., 1., -1., 1., -1.},
                                                {-1., 1., -1., 1., 1., -1., 1., -1.}};

// The Flanagan-Belytschko anti-hourglass force at each corner (into
// force[8]), from the element's corner positions p, velocities vel, volume
// derivatives dvol, its volume, sound speed, mass and the hourglass
// coefficient. cube_root_volume is the volume's cube root (the caller's, so
// that it is computed alike everywhere; cube_root.h).
inline void HourglassForces(const Corners& p, const Corners& vel, const V3 dvol[8], double volume,
                            double cube_root_volume, double sound_speed, double mass, double hourglass_coefficient,
                            V3 force[8]) {
  double gamma[8][4];  // the base vectors made orthogonal to the linear field
  const double inverse_volume = 1.0 / volume;
  for (int m = 0; m < 4; ++m) {
    const double* g = kHourglassBase[m];
    V3 mode = {0.0, 0.0, 0.0};
    mode.x = p[0].x * g[0] + p[1].x * g[1] + p[2].x * g[2] + p[3].x * g[3] + p[4].x * g[4] + p[5].x * g[5] +
             p[6].x * g[6] + p[7].x * g[7];
    mode.y = p[0].y * g[0] + p[1].y * g[1] + p[2].y * g[2] + p[3].y * g[3] + p[4].y * g[4] + p[5].y * g[5] +
             p[6].y * g[6] + p[7].y * g[7];
    mode.z = p[0].z * g[0] + p[1].z * g[1] + p[2].z * g[2] + p[3].z * g[3] + p[4].z * g[4] + p[5].z * g[5] +
             p[6].z * g[6] + p[7].z * g[7];
    for (int c = 0; c < 8; ++c) gamma[c][m] = g[c] - inverse_volume * Dot(dvol[c], mode);
  }
  const double coefficient = -hourglass_coefficient * 0.01 * sound_speed * mass / cube_root_volume;
  // One velocity component at a time: project on the modes, then spread back.
  double v[3][8], f[3][8];
  for (int c = 0; c < 8; ++c) {
    v[0][c] = vel[c].x;
    v[1][c] = vel[c].y;
    v[2][c] = vel[c].z;
  }
  for (int axis = 0; axis < 3; ++axis) {
    const double* u = v[axis];
    double h[4];
    for (int m = 0; m < 4; ++m) {
      h[m] = gamma[0][m] * u[0] + gamma[1][m] * u[1] + gamma[2][m] * u[2] + gamma[3][m] * u[3] + gamma[4][m] * u[4] +
             gamma[5][m] * u[5] + gamma[6][m] * u[6] + gamma[7][m] * u[7];
    }
    for (int c = 0; c < 8; ++c) {
      f[axis][c] = coefficient * (gamma[c][0] * h[0] + gamma[c][1] * h[1] + gamma[c][2] * h[2] + gamma[c][3] * h[3]);
    }
  }
  for (int c = 0; c < 8; ++c) force[c] = {f[0][c], f[1][c], f[2][c]};
}

// The element's characteristic length: its volume over its largest face's
// area (4 V / sqrt(max of the faces' 16 A^2)).
inline double CharacteristicLength(const Corners& p, double volume) {
  static constexpr int kFaces[6][4] = {{0, 1, 2, 3}, {4, 5, 6, 7}, {0, 1, 5, 4},
                                       {1, 2, 6, 5}, {2, 3, 7, 6}, {3, 0, 4, 7}};
  double largest = 0.0;
  for (const auto& f : kFaces) {
    V3 diag0 = p[f[2]] - p[f[0]], diag1 = p[f[3]] - p[f[1]];
    V3 f_vec = diag0 - diag1, g_vec = diag0 + diag1;
    double fg = Dot(f_vec, g_vec);
    double area = Dot(f_vec, f_vec) * Dot(g_vec, g_vec) - fg * fg;
    largest = (area < largest) ? largest : area;  // std::max's order: a NaN area wins
  }
  return 4.0 * volume / std::sqrt(largest);
}

// The trace of the velocity gradient (the relative rate of volume change),
// from the shape-function derivatives grad and Jacobian determinant.
inline double VolumeStrainRate(const Corners& vel, const V3 grad[8], double determinant) {
  const double inverse = 1.0 / determinant;
  double dxx = inverse * (grad[0].x * (vel[0].x - vel[6].x) + grad[1].x * (vel[1].x - vel[7].x) +
                          grad[2].x * (vel[2].x - vel[4].x) + grad[3].x * (vel[3].x - vel[5].x));
  double dyy = inverse * (grad[0].y * (vel[0].y - vel[6].y) + grad[1].y * (vel[1].y - vel[7].y) +
                          grad[2].y * (vel[2].y - vel[4].y) + grad[3].y * (vel[3].y - vel[5].y));
  double dzz = inverse * (grad[0].z * (vel[0].z - vel[6].z) + grad[1].z * (vel[1].z - vel[7].z) +
                          grad[2].z * (vel[2].z - vel[4].z) + grad[3].z * (vel[3].z - vel[5].z));
  return dxx + dyy + dzz;
}

// Along each logical axis: the element's thickness (delx) and the velocity
// difference across it per unit thickness (delv), the inputs of the
// monotonic q limiter.
struct AxisGradients {
  double delx[3];  // xi, eta, zeta
  double delv[3];
};

inline AxisGradients MonotonicQGradients(const Corners& p, const Corners& vel, double volume) {
  constexpr double kTiny = 1.e-36;
  // The mean of the "plus" face minus that of the "minus" face, per axis.
  auto across = [](const Corners& f, const int plus[4], const int minus[4]) {
    return 0.25 * ((f[plus[0]] + f[plus[1]] + f[plus[2]] + f[plus[3]]) -
                   (f[minus[0]] + f[minus[1]] + f[minus[2]] + f[minus[3]]));
  };
  static constexpr int kPlus[3][4] = {{1, 2, 6, 5}, {3, 2, 6, 7}, {4, 5, 6, 7}};
  static constexpr int kMinus[3][4] = {{0, 3, 7, 4}, {0, 1, 5, 4}, {0, 1, 2, 3}};
  V3 d[3];
  for (int a = 0; a < 3; ++a) d[a] = across(p, kPlus[a], kMinus[a]);
  const double norm = 1.0 / (volume + kTiny);
  AxisGradients out;
  for (int a = 0; a < 3; ++a) {
    // The face normal to axis a: the cross product of the two other axes.
    V3 n = Cross(d[(a + 1) % 3], d[(a + 2) % 3]);
    out.delx[a] = volume / std::sqrt(Dot(n, n) + kTiny);
    V3 dv = across(vel, kPlus[a], kMinus[a]);
    out.delv[a] = Dot(norm * n, dv);
  }
  return out;
}

}  // namespace lulesh::hex
