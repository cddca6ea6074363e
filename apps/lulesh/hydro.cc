// Domain (hydro.h): building a subdomain, its exchanges with its
// neighbours, the canonical sums over shared nodes, and checkpoints. The
// step's three phases are in hydro_step.cc.
#include "hydro.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <string>

#include "cube_root.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

#include "hex.h"

namespace lulesh {
namespace {

constexpr double kStateMagic = 1280658501.0;  // "LULE"
constexpr double kStateVersion = 1.0;
constexpr size_t kStateHeader = 10;

std::string DirectionName(int direction) {
  if (direction < 0 || direction >= Domain::kDirections) return "direction " + std::to_string(direction);
  static const char* kSign[3] = {"-", "0", "+"};
  return std::string("(") + kSign[direction % 3] + "," + kSign[direction / 3 % 3] + "," + kSign[direction / 9] + ")";
}

const char* ExchangeName(Exchange kind) {
  switch (kind) {
    case Exchange::kNodalMass: return "nodal mass";
    case Exchange::kNodalForce: return "nodal force";
    case Exchange::kVelocityGradient: return "velocity gradient";
  }
  return "?";
}

int Component(int direction, int axis) {
  return (axis == 0 ? direction : axis == 1 ? direction / 3 : direction / 9) % 3 - 1;
}

// The part of a lattice of `extent` points per axis that the neighbour at
// `direction` shares: per axis the first point (component -1), all of
// them (0), or the last (+1). [lo, hi) per axis.
struct Box {
  int lo[3], hi[3];
  int Count() const { return (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]); }
};

Box SharedBox(int direction, int extent) {
  Box box;
  for (int axis = 0; axis < 3; ++axis) {
    int c = Component(direction, axis);
    box.lo[axis] = c > 0 ? extent - 1 : 0;
    box.hi[axis] = c < 0 ? 1 : extent;
  }
  return box;
}

bool IsFace(int direction) {
  int nonzero = 0;
  for (int axis = 0; axis < 3; ++axis) nonzero += Component(direction, axis) != 0;
  return nonzero == 1;
}

}  // namespace

Domain::Domain(const Config& config, uint64_t index) : index_(index), iteration_cap_(config.iterations) {
  if (config.size == 0 || config.size > kMaxSize) {
    throw HydroError(Failure::kBadConfig, "lulesh: size " + std::to_string(config.size) + " is not in [1, " +
                                              std::to_string(kMaxSize) + "]");
  }
  if (config.domains == 0 || config.domains > kMaxDomains) {
    throw HydroError(Failure::kBadConfig, "lulesh: domains " + std::to_string(config.domains) + " is not in [1, " +
                                              std::to_string(kMaxDomains) + "]");
  }
  const uint64_t count = config.domains * config.domains * config.domains;
  if (index >= count) {
    throw HydroError(Failure::kBadConfig,
                     "lulesh: subdomain " + std::to_string(index) + " of " + std::to_string(count) + " does not exist");
  }
  size_ = int(config.size);
  nodes_per_edge_ = size_ + 1;
  domains_ = int(config.domains);
  location_[0] = int(index % config.domains);
  location_[1] = int(index / config.domains % config.domains);
  location_[2] = int(index / (config.domains * config.domains));
  num_elements_ = size_ * size_ * size_;
  num_nodes_ = nodes_per_edge_ * nodes_per_edge_ * nodes_per_edge_;

  position_.assign(num_nodes_, {0.0, 0.0, 0.0});
  velocity_.assign(num_nodes_, {0.0, 0.0, 0.0});
  force_.assign(num_nodes_, {0.0, 0.0, 0.0});
  partial_mass_.assign(num_nodes_, 0.0);
  mass_.assign(num_nodes_, 0.0);
  for (auto* field : {&energy_, &pressure_, &q_, &sound_speed_, &reference_volume_, &new_volume_, &delta_volume_,
                      &vdov_, &char_length_, &delv_[0], &delv_[1], &delv_[2], &delx_[0], &delx_[1], &delx_[2]}) {
    field->assign(num_elements_, 0.0);
  }
  volume_.assign(num_elements_, 1.0);

  // The mesh: LULESH's uniform cube of edge 1.125, this subdomain's part.
  const double mesh_edge = double(domains_ * size_);
  auto coordinate = [&](int axis, int c) { return 1.125 * double(location_[axis] * size_ + c) / mesh_edge; };
  for (int k = 0; k < nodes_per_edge_; ++k) {
    for (int j = 0; j < nodes_per_edge_; ++j) {
      for (int i = 0; i < nodes_per_edge_; ++i)
        position_[NodeIndex(i, j, k)] = {coordinate(0, i), coordinate(1, j), coordinate(2, k)};
    }
  }
  // Element volumes (= masses, at density 1) and this subdomain's share of
  // the nodal masses, element by element in LULESH's order.
  const int n1 = nodes_per_edge_, n2 = n1 * n1;
  const int corner[8] = {0, 1, n1 + 1, n1, n2, n2 + 1, n2 + n1 + 1, n2 + n1};
  int element = 0;
  for (int k = 0; k < size_; ++k) {
    for (int j = 0; j < size_; ++j) {
      for (int i = 0; i < size_; ++i, ++element) {
        const int base = NodeIndex(i, j, k);
        hex::Corners p;
        for (int c = 0; c < 8; ++c) p[c] = position_[base + corner[c]];
        const double volume = hex::Volume(p);
        reference_volume_[element] = volume;
        for (int c = 0; c < 8; ++c) partial_mass_[base + corner[c]] += volume / 8.0;
      }
    }
  }

  // The blast: LULESH's energy for 45 elements per edge, scaled to the
  // whole problem's edge, in the element at the origin. Every subdomain
  // derives the first increment from that element's volume.
  const double scale = double(domains_ * size_) / 45.0;
  const double initial_energy = 3.948746e+7 * scale * scale * scale;
  if (index_ == 0) energy_[0] = initial_energy;
  hex::Corners origin;
  for (int c = 0; c < 8; ++c) {
    const int off[3] = {(c == 1 || c == 2 || c == 5 || c == 6), (c == 2 || c == 3 || c == 6 || c == 7), c >= 4};
    origin[c] = {1.125 * double(off[0]) / mesh_edge, 1.125 * double(off[1]) / mesh_edge,
                 1.125 * double(off[2]) / mesh_edge};
  }
  deltatime_ = (0.5 * CubeRoot(hex::Volume(origin))) / std::sqrt(2.0 * initial_energy);

  // One receive buffer per neighbour, as large as its largest exchange.
  for (int direction = 0; direction < kDirections; ++direction) {
    size_t largest = 0;
    for (Exchange kind : {Exchange::kNodalMass, Exchange::kNodalForce, Exchange::kVelocityGradient}) {
      largest = std::max(largest, ExportSize(kind, direction));
    }
    inbox_[direction].reserve(largest);
  }
  stage_ = Stage::kSetup;
  ExpectImports(Exchange::kNodalMass);
}

Domain Domain::Restore(const Config& config, uint64_t index, std::span<const double> state) {
  Domain domain(config, index);
  const size_t expected = kStateHeader + 6 * size_t(domain.num_nodes_) + 5 * size_t(domain.num_elements_);
  auto refuse = [&](const std::string& why) {
    throw HydroError(Failure::kBadState, "lulesh: cannot restore subdomain " + std::to_string(index) + ": " + why);
  };
  if (state.size() != expected) {
    refuse("the state has " + std::to_string(state.size()) + " values, size " + std::to_string(config.size) +
           " needs " + std::to_string(expected));
  }
  if (state[0] != kStateMagic || state[1] != kStateVersion) refuse("not a saved lulesh subdomain (version 1)");
  if (state[2] != double(config.size) || state[3] != double(config.domains) || state[4] != double(index)) {
    auto number = [](double value) {
      char text[32];
      std::snprintf(text, sizeof text, "%.17g", value);
      return std::string(text);
    };
    refuse("it was saved for size " + number(state[2]) + ", domains " + number(state[3]) + ", subdomain " +
           number(state[4]));
  }
  for (double value : state) {
    if (!std::isfinite(value)) refuse("it holds a value that is not finite");
  }
  const double cycle = state[5];
  if (cycle < 0 || cycle != std::floor(cycle) || cycle > 9.0e15) refuse("its cycle is not a count");
  if (!(state[7] > 0.0)) refuse("its time increment is not positive");
  domain.cycle_ = uint64_t(cycle);
  domain.time_ = state[6];
  domain.deltatime_ = state[7];
  domain.constraints_ = {state[8], state[9]};
  const double* at = state.data() + kStateHeader;
  for (int node = 0; node < domain.num_nodes_; ++node, at += 6) {
    domain.position_[node] = {at[0], at[1], at[2]};
    domain.velocity_[node] = {at[3], at[4], at[5]};
  }
  for (int e = 0; e < domain.num_elements_; ++e, at += 5) {
    domain.energy_[e] = at[0];
    domain.pressure_[e] = at[1];
    domain.q_[e] = at[2];
    domain.volume_[e] = at[3];
    domain.sound_speed_[e] = at[4];
  }
  return domain;
}

std::vector<double> Domain::Save() const {
  RequireStage(Stage::kReady, "Save");
  std::vector<double> state;
  state.reserve(kStateHeader + 6 * size_t(num_nodes_) + 5 * size_t(num_elements_));
  state.insert(state.end(), {kStateMagic, kStateVersion, double(size_), double(domains_), double(index_),
                             double(cycle_), time_, deltatime_, constraints_.courant, constraints_.hydro});
  for (int node = 0; node < num_nodes_; ++node) {
    const hex::V3 &p = position_[node], &v = velocity_[node];
    state.insert(state.end(), {p.x, p.y, p.z, v.x, v.y, v.z});
  }
  for (int e = 0; e < num_elements_; ++e) {
    state.insert(state.end(), {energy_[e], pressure_[e], q_[e], volume_[e], sound_speed_[e]});
  }
  return state;
}

bool Domain::HasNeighbour(int dx, int dy, int dz) const {
  const int delta[3] = {dx, dy, dz};
  for (int axis = 0; axis < 3; ++axis) {
    int at = location_[axis] + delta[axis];
    if (at < 0 || at >= domains_) return false;
  }
  return true;
}

uint64_t Domain::Neighbour(int direction) const {
  if (direction < 0 || direction >= kDirections || direction == kSelf ||
      !HasNeighbour(Component(direction, 0), Component(direction, 1), Component(direction, 2))) {
    throw HydroError(Failure::kProtocol, "lulesh: subdomain " + std::to_string(index_) + " has no neighbour at " +
                                             std::to_string(direction));
  }
  const int64_t d = domains_;
  return uint64_t(int64_t(index_) + Component(direction, 0) + d * Component(direction, 1) +
                  d * d * Component(direction, 2));
}

std::vector<int> Domain::Directions(Exchange kind) const {
  std::vector<int> out;
  for (int direction = 0; direction < kDirections; ++direction) {
    if (ExportSize(kind, direction) != 0) out.push_back(direction);
  }
  return out;
}

size_t Domain::ExportSize(Exchange kind, int direction) const {
  if (direction < 0 || direction >= kDirections || direction == kSelf) return 0;
  if (!HasNeighbour(Component(direction, 0), Component(direction, 1), Component(direction, 2))) return 0;
  switch (kind) {
    case Exchange::kNodalMass: return size_t(SharedBox(direction, nodes_per_edge_).Count());
    case Exchange::kNodalForce: return 3 * size_t(SharedBox(direction, nodes_per_edge_).Count());
    case Exchange::kVelocityGradient: return IsFace(direction) ? size_t(size_) * size_t(size_) : 0;
  }
  return 0;
}

std::vector<double> Domain::Export(Exchange kind, int direction) const {
  std::vector<double> out;
  ExportInto(kind, direction, out);
  return out;
}

void Domain::ExportInto(Exchange kind, int direction, std::vector<double>& out) const {
  const size_t length = ExportSize(kind, direction);
  if (length == 0) {
    throw HydroError(Failure::kProtocol, std::string("lulesh: no ") + ExchangeName(kind) + " exchange toward " +
                                             DirectionName(direction) + " from subdomain " + std::to_string(index_));
  }
  if (kind == Exchange::kNodalForce) RequireStage(Stage::kForces, "Export(nodal force)");
  if (kind == Exchange::kVelocityGradient) RequireStage(Stage::kGradients, "Export(velocity gradient)");
  out.clear();
  out.reserve(length);
  if (kind == Exchange::kVelocityGradient) {
    // The layer of elements along the face, x fastest; only the gradient
    // along the face's normal axis crosses it.
    const Box box = SharedBox(direction, size_);
    int axis = Component(direction, 0) != 0 ? 0 : Component(direction, 1) != 0 ? 1 : 2;
    for (int k = box.lo[2]; k < box.hi[2]; ++k) {
      for (int j = box.lo[1]; j < box.hi[1]; ++j) {
        for (int i = box.lo[0]; i < box.hi[0]; ++i) out.push_back(delv_[axis][i + size_ * (j + size_ * k)]);
      }
    }
    return;
  }
  const Box box = SharedBox(direction, nodes_per_edge_);
  for (int k = box.lo[2]; k < box.hi[2]; ++k) {
    for (int j = box.lo[1]; j < box.hi[1]; ++j) {
      for (int i = box.lo[0]; i < box.hi[0]; ++i) {
        const int node = NodeIndex(i, j, k);
        if (kind == Exchange::kNodalMass) {
          out.push_back(partial_mass_[node]);
        } else {
          out.insert(out.end(), {force_[node].x, force_[node].y, force_[node].z});
        }
      }
    }
  }
}

void Domain::ExpectImports(Exchange kind) {
  awaited_ = kind;
  expected_ = 0;
  received_ = 0;
  for (int direction : Directions(kind)) expected_ |= uint32_t{1} << direction;
}

void Domain::Import(Exchange kind, int from_direction, std::span<const double> data) {
  const Stage awaiting = kind == Exchange::kNodalMass    ? Stage::kSetup
                         : kind == Exchange::kNodalForce ? Stage::kForces
                                                         : Stage::kGradients;
  auto refuse = [&](const std::string& why) {
    throw HydroError(Failure::kProtocol, std::string("lulesh: subdomain ") + std::to_string(index_) + " refuses a " +
                                             ExchangeName(kind) + " import from " + DirectionName(from_direction) +
                                             ": " + why);
  };
  if (stage_ != awaiting || awaited_ != kind) refuse("it does not await one now");
  if (from_direction < 0 || from_direction >= kDirections || !(expected_ & (uint32_t{1} << from_direction))) {
    refuse("no neighbour there exchanges it");
  }
  if (received_ & (uint32_t{1} << from_direction)) refuse("it has one from there already");
  if (data.size() != ExportSize(kind, from_direction)) {
    refuse(std::to_string(data.size()) + " values, not " + std::to_string(ExportSize(kind, from_direction)));
  }
  inbox_[from_direction].assign(data.begin(), data.end());
  received_ |= uint32_t{1} << from_direction;
}

void Domain::RequireStage(Stage stage, const char* phase) const {
  if (stage_ == stage) return;
  static const char* kNames[] = {"setup", "between steps", "after StartStep", "after AdvanceNodes", "failed"};
  throw HydroError(Failure::kProtocol, std::string("lulesh: ") + phase + " on subdomain " + std::to_string(index_) +
                                           " " + kNames[int(stage_)] + ", not " + kNames[int(stage)]);
}

void Domain::RequireImports(Stage stage, const char* phase) {
  RequireStage(stage, phase);
  const uint32_t missing = expected_ & ~received_;
  if (missing == 0) return;
  const int direction = std::countr_zero(missing);
  throw HydroError(Failure::kProtocol, std::string("lulesh: ") + phase + " on subdomain " + std::to_string(index_) +
                                           " lacks the " + ExchangeName(awaited_) + " import from " +
                                           DirectionName(direction) + " (subdomain " +
                                           std::to_string(Neighbour(direction)) + ")");
}

void Domain::Fail(Failure failure, const std::string& what) {
  stage_ = Stage::kFailed;
  throw HydroError(failure,
                   "lulesh: subdomain " + std::to_string(index_) + " at cycle " + std::to_string(cycle_) + ": " + what);
}

// Every holder of a shared node adds the holders' partial values in
// increasing subdomain index (= increasing direction code, the own partial
// at kSelf), so all copies of the node get the same bits. field(node, f)
// is the node's f-th value, kFields of them; inbox_ holds the neighbours'
// values in their SharedBox order.
template <int kFields, class Field>
void Domain::SumSharedNodes(Field field) {
  const int n = size_, n1 = nodes_per_edge_;
  auto lowest = [&](int axis, int c) { return c == 0 && location_[axis] > 0 ? -1 : 0; };
  auto highest = [&](int axis, int c) { return c == n && location_[axis] < domains_ - 1 ? 1 : 0; };
  for (int c = 0; c < n1; ++c) {
    const int z0 = lowest(2, c), z1 = highest(2, c);
    for (int b = 0; b < n1; ++b) {
      const int y0 = lowest(1, b), y1 = highest(1, b);
      const bool row_shared = (z0 | z1 | y0 | y1) != 0;
      for (int a = 0; a < n1; a += row_shared ? 1 : n) {  // else only the row's ends can be shared
        const int x0 = lowest(0, a), x1 = highest(0, a);
        if (!row_shared && x0 == 0 && x1 == 0) continue;
        const int node = NodeIndex(a, b, c);
        double sum[kFields];
        bool first = true;
        for (int dz = z0; dz <= z1; ++dz) {
          for (int dy = y0; dy <= y1; ++dy) {
            for (int dx = x0; dx <= x1; ++dx) {
              double value[kFields];
              if (dx == 0 && dy == 0 && dz == 0) {
                for (int f = 0; f < kFields; ++f) value[f] = field(node, f);
              } else {
                const int at = (dx == 0 ? a : 0) +
                               (dx == 0 ? n1 : 1) * ((dy == 0 ? b : 0) + (dy == 0 ? n1 : 1) * (dz == 0 ? c : 0));
                const double* in = &inbox_[Direction(dx, dy, dz)][size_t(at) * kFields];
                for (int f = 0; f < kFields; ++f) value[f] = in[f];
              }
              for (int f = 0; f < kFields; ++f) sum[f] = first ? value[f] : sum[f] + value[f];
              first = false;
            }
          }
        }
        for (int f = 0; f < kFields; ++f) field(node, f) = sum[f];
      }
    }
  }
}

void Domain::CompleteSetup() {
  RequireImports(Stage::kSetup, "CompleteSetup");
  mass_ = partial_mass_;
  SumSharedNodes<1>([this](int node, int) -> double& { return mass_[node]; });
  stage_ = Stage::kReady;
}

void Domain::SumSharedForces() {
  SumSharedNodes<3>([this](int node, int f) -> double& {
    hex::V3& v = force_[node];
    return f == 0 ? v.x : f == 1 ? v.y : v.z;
  });
}

SymmetryReport Domain::Symmetry() const {
  SymmetryReport report;
  const int n = size_;
  for (int j = 0; j < n; ++j) {
    for (int k = j + 1; k < n; ++k) {
      double diff = std::fabs(energy_[j * n + k] - energy_[k * n + j]);
      report.total_abs_diff += diff;
      if (report.max_abs_diff < diff) report.max_abs_diff = diff;
      double relative = diff / energy_[k * n + j];
      if (report.max_rel_diff < relative) report.max_rel_diff = relative;
    }
  }
  return report;
}

}  // namespace lulesh
