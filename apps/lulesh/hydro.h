// LULESH 2.0's Sedov blast problem (LLNL-TR-641973, "Hydrodynamics
// Challenge Problem") as fox's own code: explicit Lagrangian shock
// hydrodynamics on a cube of hexahedral elements, decomposed into
// subdomains that the application distributes over places.
//
// Decomposition. The problem is a cube of (d*s)^3 elements: d^3 subdomains
// (Config::domains = d) of s^3 elements each (Config::size = s), laid out
// like LULESH's MPI ranks: subdomain i sits at column i % d, row (i / d) % d
// and plane i / d^2 (x fastest). Its mesh is bit-for-bit the corresponding
// part of LULESH's single-domain mesh of size d*s. A Domain holds one
// subdomain's nodes ((s+1)^3, those on its faces also held by neighbours)
// and elements (s^3, owned alone), and is built from (Config, index) alone:
// any process builds subdomain i alike.
//
// Directions. A neighbour is named by its direction (dx, dy, dz) in
// {-1, 0, 1}^3 \ {0}, encoded as (dx+1) + 3(dy+1) + 9(dz+1): 0..26 without
// kSelf = 13. Increasing direction order is increasing subdomain index.
//
// The step and its exchanges. One step is LULESH's TimeIncrement and
// LagrangeLeapFrog, cut where subdomains need each other's data. The caller
// runs each phase on every subdomain, then moves the exchange's vectors
// (Export on the sender, Import on the receiver; plain doubles, in any
// order, through any transport), then the next phase:
//
//   setup   Domain(config, i) or Domain::Restore(config, i, state)
//           exchange kNodalMass with every neighbour (26 at most):
//             (s+1)^2 doubles per face, s+1 per edge, 1 per corner
//           CompleteSetup()
//   step    while (!Done()):
//             global = Min over all subdomains of Constraints()   [caller]
//             StartStep(global)    time increment; element stress and
//                                  hourglass forces into nodal partial sums
//             exchange kNodalForce with every neighbour:
//               3 (s+1)^2 per face, 3 (s+1) per edge, 3 per corner
//             AdvanceNodes()       nodal forces summed, accelerations,
//                                  velocities, positions; element volumes,
//                                  strain rates and velocity gradients
//             exchange kVelocityGradient with the 6 face neighbours:
//               s^2 doubles (the gradient along the face's normal axis)
//             FinishStep()         artificial viscosity, equation of state,
//                                  volumes, this subdomain's time constraints
//
// Determinism. A node on a face, edge or corner belongs to 2, 4 or 8
// subdomains. Each computes a partial sum over its own elements (in its
// element order, as LULESH does), and every holder of the node adds the
// holders' partial sums in one canonical order: increasing subdomain index,
// its own partial at its own index's position. So every copy of a shared
// node gets the same mass and force bits, hence the same accelerations,
// velocities and positions, with no synchronisation of positions or
// velocities (LULESH's CommSyncPosVel has no counterpart here). Imports are
// buffered per direction and only combined by the next phase, so the order
// in which the caller delivers them does not matter. The time constraints
// are reduced with min, which is exact in any order. Cube roots come from
// CubeRoot (cube_root.h), not the C library, and the sources are compiled
// without fused multiply-adds. So for a fixed Config the answer's bits do
// not depend on which process holds which subdomain, on the delivery order,
// or on checkpoints and restores. With d = 1 they are LULESH's own (serial,
// any -r) but for its C library's cube root; with d > 1 they differ from
// the single-domain run of size d*s only by the order of those shared-node
// sums.
//
// Regions. LULESH's -r splits the elements into regions whose equation of
// state it evaluates 1 to 20 times over to add cost; every repetition
// computes the same values, so regions change the run time, not a bit of
// the answer (checked: -r 1 and -r 11 give the same bits). There is one
// region here.
//
// Time constraints. The caller reduces (min) the Courant and hydro
// constraints separately and StartStep derives the next time increment from
// the global pair, as single-domain LULESH does. (LULESH's MPI version
// reduces each rank's own derived increment, which can differ.)
//
// Threads: a Domain is a plain value; nothing in it is shared. Distinct
// Domains may be used from distinct threads at once; one Domain from one
// thread at a time. Phases allocate nothing; Export returns a new vector.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "vec3.h"

namespace lulesh {

struct Config {
  uint64_t size = 30;       // elements per edge of ONE subdomain (LULESH's -s)
  uint64_t domains = 1;     // subdomains per edge: d, the problem has d*d*d subdomains
  uint64_t iterations = 0;  // cap on iterations, 0 = run to the stop time (LULESH's -i)
  template <class A>
  void serialize(A& ar) {
    ar(size, domains, iterations);
  }
};

// Limits on Config: local indices are 32-bit.
inline constexpr uint64_t kMaxSize = 1000;
inline constexpr uint64_t kMaxDomains = 1000;

// A subdomain's time-step constraints (LULESH's dtcourant and dthydro);
// 1e20 means "none".
struct TimeConstraints {
  double courant = 1.0e+20;
  double hydro = 1.0e+20;
  template <class A>
  void serialize(A& ar) {
    ar(courant, hydro);
  }
};

// The componentwise minimum: the caller's reduction, exact in any order.
inline TimeConstraints Min(const TimeConstraints& a, const TimeConstraints& b) {
  return {a.courant < b.courant ? a.courant : b.courant, a.hydro < b.hydro ? a.hydro : b.hydro};
}

// What an exchange carries (see the top comment for when and how much).
enum class Exchange : uint8_t { kNodalMass, kNodalForce, kVelocityGradient };

// Which failure a HydroError reports.
enum class Failure : uint8_t {
  kBadConfig,       // Config or index out of range
  kBadState,        // a saved state that does not fit (Restore)
  kProtocol,        // a call out of the protocol's order, or a malformed import
  kNegativeVolume,  // an element turned inside out (LULESH's VolumeError)
  kExcessiveQ,      // artificial viscosity above its stop value (LULESH's QStopError)
};

class HydroError : public std::runtime_error {
 public:
  HydroError(Failure failure, const std::string& what) : std::runtime_error(what), failure_(failure) {}
  Failure failure() const { return failure_; }

 private:
  Failure failure_;
};

// LULESH's symmetry check of the final energies: plane z = 0 of a
// subdomain compared with its mirror image across x = y.
struct SymmetryReport {
  double max_abs_diff = 0.0;
  double total_abs_diff = 0.0;
  double max_rel_diff = 0.0;
};

class Domain {
 public:
  static constexpr int kDirections = 27;  // codes 0..26, kSelf excluded
  static constexpr int kSelf = 13;

  // The code of direction (dx, dy, dz), each in {-1, 0, 1}.
  static constexpr int Direction(int dx, int dy, int dz) { return (dx + 1) + 3 * (dy + 1) + 9 * (dz + 1); }
  // The direction back: where this subdomain lies as seen from the
  // neighbour at `direction`.
  static constexpr int Opposite(int direction) { return 26 - direction; }

  // Builds subdomain `index` of config's problem at time 0 (stage: setup).
  // Throws HydroError(kBadConfig) if size is 0 or above kMaxSize, domains
  // is 0 or above kMaxDomains, or index >= domains^3. Allocates all of the
  // subdomain's memory (about 220 bytes per element); no later phase does.
  Domain(const Config& config, uint64_t index);

  // Rebuilds subdomain `index` from what Save returned (stage: setup, so
  // the caller runs the kNodalMass exchange and CompleteSetup again; the
  // neighbours' Export(kNodalMass) works at any stage). Continues bit for
  // bit as the saved Domain would have. Throws HydroError(kBadConfig) as
  // the constructor does, HydroError(kBadState) if `state` has the wrong
  // length, was saved for another size, domain count or index, or holds a
  // value that cannot be (a non-finite field, a negative time step).
  static Domain Restore(const Config& config, uint64_t index, std::span<const double> state);

  // This subdomain's index, and the index of its neighbour at `direction`.
  // Neighbour throws HydroError(kProtocol) if there is none there.
  uint64_t index() const { return index_; }
  uint64_t Neighbour(int direction) const;

  // The directions this subdomain exchanges `kind` with, in increasing
  // order: every existing neighbour for the nodal exchanges, the existing
  // face neighbours for kVelocityGradient. Empty when domains == 1.
  std::vector<int> Directions(Exchange kind) const;

  // The length of the vector Export(kind, direction) returns (and that the
  // neighbour's Import expects); 0 if `direction` is not in Directions(kind).
  size_t ExportSize(Exchange kind, int direction) const;

  // What the neighbour at `direction` needs of this subdomain for `kind`,
  // as plain doubles for any transport. kNodalMass works at any stage (it
  // is constant); kNodalForce only between StartStep and AdvanceNodes;
  // kVelocityGradient only between AdvanceNodes and FinishStep. Throws
  // HydroError(kProtocol) otherwise or if `direction` is not in
  // Directions(kind). Allocates the vector; ExportInto reuses `out`.
  std::vector<double> Export(Exchange kind, int direction) const;
  void ExportInto(Exchange kind, int direction, std::vector<double>& out) const;

  // Takes the neighbour at `from_direction`'s Export(kind,
  // Opposite(from_direction)). Accepted during the stage that awaits
  // `kind` (setup for kNodalMass, after StartStep for kNodalForce, after
  // AdvanceNodes for kVelocityGradient), once per direction per stage, in
  // any order. Copies the data (no allocation). Throws HydroError(kProtocol)
  // for a kind that is not awaited, a direction not in Directions(kind), a
  // second import from one direction, or a length other than ExportSize.
  void Import(Exchange kind, int from_direction, std::span<const double> data);

  // Ends setup once every kNodalMass import has arrived: sums the shared
  // nodes' masses canonically. Throws HydroError(kProtocol) if called out
  // of setup or an import is missing.
  void CompleteSetup();

  // True when the run is over: the stop time (0.01) is reached, or
  // Config::iterations steps are done. Every subdomain answers alike.
  bool Done() const;

  // This subdomain's time constraints from its last FinishStep (1e20 each
  // before the first step, and as restored).
  TimeConstraints Constraints() const { return constraints_; }

  // Phase 1: advances the time by the next increment, derived from
  // `global` (the Min of every subdomain's Constraints(); ignored on the
  // first step), and computes each element's stress and hourglass forces
  // into this subdomain's partial nodal forces. Needs the setup done and
  // the previous step finished, else throws HydroError(kProtocol); throws
  // HydroError(kNegativeVolume) if an element is inverted.
  void StartStep(const TimeConstraints& global);

  // Phase 2, once every kNodalForce import has arrived: sums the shared
  // nodes' forces canonically, moves the nodes, and computes the elements'
  // new volumes, strain rates and velocity gradients. Throws
  // HydroError(kProtocol) out of order or with an import missing,
  // HydroError(kNegativeVolume) if an element is inverted.
  void AdvanceNodes();

  // Phase 3, once every kVelocityGradient import has arrived: artificial
  // viscosity, equation of state, new volumes, and this subdomain's time
  // constraints (returned, and kept for Constraints()). Throws
  // HydroError(kProtocol) out of order or with an import missing,
  // HydroError(kExcessiveQ) or HydroError(kNegativeVolume) as LULESH aborts.
  TimeConstraints FinishStep();

  // The evolving state, between steps (after CompleteSetup or FinishStep):
  // positions and velocities of the nodes, energy, pressure, q, relative
  // volume and sound speed of the elements, time, increment, cycle and the
  // constraints; 10 + 6 (s+1)^3 + 5 s^3 doubles. Throws
  // HydroError(kProtocol) mid-step. Constant fields (masses, reference
  // volumes, the mesh's topology) are rebuilt from the Config.
  std::vector<double> Save() const;

  // Results. cycle: steps done; time: simulated time; deltatime: the last
  // increment. OriginEnergy: energy of this subdomain's element 0, which on
  // subdomain 0 is LULESH's "Final Origin Energy". Symmetry: LULESH's check
  // on this subdomain (meaningful for subdomain 0, as LULESH's rank 0).
  uint64_t cycle() const { return cycle_; }
  double time() const { return time_; }
  double deltatime() const { return deltatime_; }
  double OriginEnergy() const { return energy_[0]; }
  SymmetryReport Symmetry() const;

 private:
  enum class Stage : uint8_t { kSetup, kReady, kForces, kGradients, kFailed };

  int NodeIndex(int i, int j, int k) const { return i + nodes_per_edge_ * (j + nodes_per_edge_ * k); }
  bool HasNeighbour(int dx, int dy, int dz) const;
  void ExpectImports(Exchange kind);
  void RequireImports(Stage stage, const char* phase);
  void RequireStage(Stage stage, const char* phase) const;
  [[noreturn]] void Fail(Failure failure, const std::string& what);
  template <int kFields, class Field>
  void SumSharedNodes(Field field);
  void SumSharedForces();
  void AdvanceTime(const TimeConstraints& global);
  void AccumulateStressForces();
  void AccumulateHourglassForces();
  void MoveNodes();
  void UpdateElementKinematics();
  double NeighbourGradient(int axis, int side, const int at[3], int element) const;

  // Shape.
  uint64_t index_;
  int size_;            // elements per edge
  int nodes_per_edge_;  // size_ + 1
  int domains_;
  int location_[3];  // column, row, plane
  int num_elements_, num_nodes_;
  uint64_t iteration_cap_;

  // Nodes.
  std::vector<hex::V3> position_, velocity_, force_;
  std::vector<double> partial_mass_, mass_;

  // Elements.
  std::vector<double> energy_, pressure_, q_, volume_, sound_speed_;  // evolving state
  std::vector<double> reference_volume_;                              // = mass (density 1)
  std::vector<double> new_volume_, delta_volume_, vdov_, char_length_;
  std::vector<double> delv_[3], delx_[3];  // per logical axis: xi, eta, zeta

  // Time.
  double time_ = 0.0, deltatime_ = 0.0;
  uint64_t cycle_ = 0;
  TimeConstraints constraints_;

  // Exchange.
  Stage stage_ = Stage::kSetup;
  Exchange awaited_ = Exchange::kNodalMass;
  uint32_t expected_ = 0, received_ = 0;  // bit per direction
  std::vector<double> inbox_[kDirections];
};

}  // namespace lulesh
