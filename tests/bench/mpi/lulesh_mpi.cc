// lulesh's MPI peer (tests/bench/apps.py): the same subdomains
// (apps/lulesh/hydro.h: the same physics and exchange data), rank r holding
// subdomains b with b % size == r as fox's places do, written as LULESH's
// MPI version exchanges: per exchange, every receive posted first
// (MPI_Irecv from each rank that holds a neighbour, its length known in
// advance), the exports packed per rank and sent (MPI_Isend), the local
// neighbours' imports done meanwhile, then MPI_Waitall; the time
// constraints by one MPI_Allreduce (min) per step. Rank 0 prints LULESH's
// figures (which must be fox's: hydro.h's sums are in one order whatever
// holds the subdomains) and the times.
//
//   lulesh_mpi SIZE DOMAINS ITERATIONS
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <vector>

#include "lulesh/hydro.h"
#include "ranks.h"

namespace {

using lulesh::Domain;
using lulesh::Exchange;

struct Rank {
  int rank = 0, size = 1;
  std::vector<std::unique_ptr<Domain>> held;  // b = rank, rank + size, ...
  Domain& Held(uint64_t b) { return *held[b / uint64_t(size)]; }

  // One exchange of `kind`: a message per rank holding a neighbour, its
  // records (subdomain, direction, length) first, then their data.
  void Run(Exchange kind) {
    std::vector<std::vector<double>> out(static_cast<size_t>(size)), in(static_cast<size_t>(size));
    std::vector<size_t> expected(static_cast<size_t>(size), 0);
    for (auto& d : held) {
      for (int dir : d->Directions(kind)) {
        int holder = int(d->Neighbour(dir) % uint64_t(size));
        if (holder != rank) expected[size_t(holder)] += 3 + d->ExportSize(kind, dir);  // its export to us: as long
      }
    }
    std::vector<MPI_Request> requests;
    for (int p = 0; p < size; ++p) {
      if (expected[size_t(p)] == 0) continue;
      in[size_t(p)].resize(expected[size_t(p)]);
      requests.emplace_back();
      MPI_Irecv(in[size_t(p)].data(), int(expected[size_t(p)]), MPI_DOUBLE, p, int(kind), MPI_COMM_WORLD,
                &requests.back());
    }
    std::vector<double> buffer;
    for (auto& d : held) {
      for (int dir : d->Directions(kind)) {
        uint64_t b = d->Neighbour(dir);
        int holder = int(b % uint64_t(size));
        if (holder == rank) continue;
        d->ExportInto(kind, dir, buffer);
        auto& o = out[size_t(holder)];
        o.insert(o.end(), {double(b), double(Domain::Opposite(dir)), double(buffer.size())});
        o.insert(o.end(), buffer.begin(), buffer.end());
      }
    }
    for (int p = 0; p < size; ++p) {
      if (out[size_t(p)].empty()) continue;
      requests.emplace_back();
      MPI_Isend(out[size_t(p)].data(), int(out[size_t(p)].size()), MPI_DOUBLE, p, int(kind), MPI_COMM_WORLD,
                &requests.back());
    }
    for (auto& d : held) {  // the local neighbours meanwhile
      for (int dir : d->Directions(kind)) {
        uint64_t b = d->Neighbour(dir);
        if (int(b % uint64_t(size)) != rank) continue;
        d->ExportInto(kind, dir, buffer);
        Held(b).Import(kind, Domain::Opposite(dir), buffer);
      }
    }
    MPI_Waitall(int(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
    for (auto& m : in) {
      for (size_t at = 0; at + 3 <= m.size();) {
        uint64_t b = uint64_t(m[at]), length = uint64_t(m[at + 2]);
        Held(b).Import(kind, int(m[at + 1]), std::span<const double>(m.data() + at + 3, length));
        at += 3 + length;
      }
    }
  }

  // The global constraints (min) and whether all are done.
  bool Reduce(lulesh::TimeConstraints* global) {
    double mine[3] = {1.0e20, 1.0e20, 1.0};
    for (auto& d : held) {
      mine[0] = std::min(mine[0], d->Constraints().courant);
      mine[1] = std::min(mine[1], d->Constraints().hydro);
      if (!d->Done()) mine[2] = 0.0;
    }
    MPI_Allreduce(MPI_IN_PLACE, mine, 3, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    *global = {mine[0], mine[1]};
    return mine[2] == 1.0;
  }
};

}  // namespace

int main(int argc, char** argv) {
  auto r = mpi_peer::Start(&argc, &argv, 3, "lulesh_mpi SIZE DOMAINS ITERATIONS");
  if (!r) return 2;
  lulesh::Config c;
  c.size = r->args[0];
  c.domains = r->args[1];
  c.iterations = r->args[2];
  double t0 = MPI_Wtime();
  Rank me{r->rank, r->size, {}};
  for (uint64_t b = uint64_t(r->rank); b < c.domains * c.domains * c.domains; b += uint64_t(r->size)) {
    me.held.push_back(std::make_unique<Domain>(c, b));
  }
  me.Run(Exchange::kNodalMass);
  for (auto& d : me.held) d->CompleteSetup();
  lulesh::TimeConstraints global;
  bool done = me.Reduce(&global);
  MPI_Barrier(MPI_COMM_WORLD);
  double t1 = MPI_Wtime();
  while (!done) {
    for (auto& d : me.held) d->StartStep(global);
    me.Run(Exchange::kNodalForce);
    for (auto& d : me.held) d->AdvanceNodes();
    me.Run(Exchange::kVelocityGradient);
    for (auto& d : me.held) d->FinishStep();
    done = me.Reduce(&global);
  }
  double t2 = MPI_Wtime();
  if (r->rank == 0) {
    const Domain& d = *me.held[0];
    std::printf("lulesh_mpi: iteration count %" PRIu64
                ", final origin energy %12.6e (%a) on %d ranks; load %.3f s, "
                "steps %.6f s\n",
                d.cycle(), d.OriginEnergy(), d.OriginEnergy(), r->size, t1 - t0, t2 - t1);
  }
  MPI_Finalize();
  return 0;
}
