// The subdomains of LULESH's problem (hydro.h) that one place holds, and
// their step over a Team: the SPMD executor's app (fox/apgas/iterative.h).
//
// Placement: the place at index i of a group of n holds subdomains b with
// b % n == i (none when n > d^3), so any place can tell where a neighbour
// lives; after a failure remake deals them again over the new group.
//
// A step is one LULESH iteration for every subdomain held, phases spread
// over the place's activity cores; between phases the exchanges: each
// subdomain's exports to a neighbour held here are imported directly,
// those for other places packed per place and sent by one alltoall of the
// step's Team (the collective is the exchange's completion, and a dead
// member makes it throw DeadPlaceException, never hang). The time
// constraints and whether the run is over are one allreduce (min) at the
// end of the step. A subdomain made or restored from a checkpoint first
// exchanges its nodal masses (setup), in the next step. Subdomains are
// made where they are needed (the first step at time 0, or a restore),
// not when a place is dealt them.
//
// Checkpoints: each subdomain's saved state under "d<index>", saved by its
// holder; restore loads them from the snapshot group's holders (b % n_old),
// the dead place's included. A checkpoint before the first step saves
// empty states (the initial state is remade from the Config).
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "fox/apgas/apgas.h"
#include "fox/apgas/iterative.h"
#include "fox/apgas/team.h"
#include "hydro.h"

namespace lulesh {

class Subdomains {
 public:
  // The subdomains of the place at `index` of `group`, at time 0.
  Subdomains(const Config& c, const fox::apgas::PlaceGroup& group, size_t index) : config_(c) {
    Deal(index, group.size());
  }
  // All of them, at one place (the check's reference run).
  explicit Subdomains(const Config& c) : config_(c) { Deal(0, 1); }

  bool isFinished() { return finished_; }
  // One iteration of every subdomain held; team: the group's (nullptr when
  // this place holds them all).
  void step(fox::apgas::Team* team);
  void step(fox::apgas::Team& team) { step(&team); }
  void checkpoint(const fox::apgas::Snapshot& s);
  void restore(const fox::apgas::Snapshot& s);
  void remake(const fox::apgas::PlaceGroup& group, size_t index) { Deal(index, group.size()); }

  // Subdomain 0 (held by the place at index 0): the answer's figures.
  const Domain* first() const { return !domains_.empty() && domains_[0]->index() == 0 ? domains_[0].get() : nullptr; }

 private:
  // What one place sends another in an exchange: (subdomain, direction,
  // length) per export, and the exports' doubles one after another.
  struct Packet {
    std::vector<uint64_t> heads;
    std::vector<double> data;
    template <class A>
    void serialize(A& ar) {
      ar(heads, data);
    }
  };
  // Takes the subdomains of index `index` of `n`; they are made (at time 0)
  // by the next step, or by a restore, so a remake does not make them twice.
  void Deal(size_t index, size_t n);
  std::vector<uint64_t> Ids() const;  // the subdomains held, increasing
  Domain& Held(uint64_t b);
  void Exchange(lulesh::Exchange kind, fox::apgas::Team* team);
  void Reduce(fox::apgas::Team* team);
  template <class Fn>
  void ForEach(Fn fn);

  Config config_;
  size_t index_ = 0, n_ = 1;
  std::vector<std::unique_ptr<Domain>> domains_;  // by increasing index; empty until made
  bool ready_ = false;                            // setup done (masses exchanged)
  bool finished_ = false;
  TimeConstraints global_;
};

}  // namespace lulesh
