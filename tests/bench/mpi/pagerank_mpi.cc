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
#include <mpi.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "pagerank/graph.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 4) {
    if (rank == 0) std::fprintf(stderr, "usage: pagerank_mpi VERTICES ITERATIONS SEED\n");
    MPI_Finalize();
    return 2;
  }
  pagerank::Config c;
  c.vertices = std::strtoull(argv[1], nullptr, 10);
  c.iterations = std::strtoull(argv[2], nullptr, 10);
  c.seed = std::strtoull(argv[3], nullptr, 10);
  double t0 = MPI_Wtime();
  uint64_t first = c.vertices * uint64_t(rank) / uint64_t(size);
  uint64_t end = c.vertices * uint64_t(rank + 1) / uint64_t(size);
  pagerank::Edges mine = c.Make(first, end);
  pagerank::PageRank::State s = pagerank::PageRank::Initial(c);
  MPI_Barrier(MPI_COMM_WORLD);
  double t1 = MPI_Wtime();
  while (s.step < c.iterations) {
    pagerank::Partial p;
    pagerank::Contribute(c, s.ranks, mine, first, &p);
    p.each.push_back(p.extra);  // one allreduce: what arrives at each vertex, and what goes to all
    MPI_Allreduce(MPI_IN_PLACE, p.each.data(), int(p.each.size()), MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    p.extra = p.each.back();
    p.each.pop_back();
    pagerank::PageRank::Update(c, p, &s);
  }
  double t2 = MPI_Wtime();
  if (rank == 0) {
    pagerank::PageRank::Print(c, s);
    std::printf("pagerank_mpi: %" PRIu64 " steps on %d ranks; load %.3f s, steps %.3f s\n", s.step, size, t1 - t0,
                t2 - t1);
  }
  MPI_Finalize();
  return 0;
}
