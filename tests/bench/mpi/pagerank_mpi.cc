// PageRank as an MPI programmer writes it: the MPI peer of apps/pagerank
// in `make bench B=apps` (tests/bench/apps.py).
//
//   mpirun -np P pagerank_mpi VERTICES ITERATIONS SEED
//
// The same graph and arithmetic (apps/pagerank/graph.h), each rank holding
// the out-edges of a contiguous share of the vertices, generated before
// the timed steps; each step adds what the rank's vertices send into a
// dense vector and MPI_Allreduces it (vertices + 1 integers), then every
// rank computes the new ranks. Rank 0 prints the checksum (which must be
// fox's) and the times.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "pagerank/graph.h"
#include "ranks.h"

int main(int argc, char** argv) {
  auto r = mpi_peer::Start(&argc, &argv, 3, "pagerank_mpi VERTICES ITERATIONS SEED");
  if (!r) return 2;
  int size = r->size;
  pagerank::Config c;
  c.vertices = r->args[0];
  c.iterations = r->args[1];
  c.seed = r->args[2];
  double t0 = MPI_Wtime();
  uint64_t first = r->Begin(c.vertices);
  pagerank::Edges mine = c.Make(first, r->End(c.vertices));
  pagerank::PageRank::State s = pagerank::PageRank::Initial(c);
  MPI_Barrier(MPI_COMM_WORLD);
  double t1 = MPI_Wtime();
  while (s.step < c.iterations) {
    pagerank::Partial p;
    pagerank::Contribute(c, s.ranks, mine, first, &p);
    mpi_peer::Allreduce(&p);  // what arrives at each vertex, and what goes to all
    pagerank::PageRank::Update(c, p, &s);
  }
  double t2 = MPI_Wtime();
  if (r->rank == 0) {
    pagerank::PageRank::Print(c, s);
    std::printf("pagerank_mpi: %" PRIu64 " steps on %d ranks; load %.3f s, steps %.6f s\n", s.step, size, t1 - t0,
                t2 - t1);
  }
  MPI_Finalize();
  return 0;
}
