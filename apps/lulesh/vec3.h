// A point or vector of 3-space: the nodes' positions, velocities and forces.
// Only the type lives here (hydro.h stores it); its arithmetic is in hex.h,
// which only the physics' own sources include, after turning off fused
// multiply-adds.
#pragma once

namespace lulesh::hex {

struct V3 {
  double x, y, z;
};

}  // namespace lulesh::hex
