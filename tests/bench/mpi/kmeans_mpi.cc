// KMeans as an MPI programmer writes it: the MPI peer of apps/kmeans in
// `make bench B=apps` (tests/bench/apps.py), built there with mpicxx.
//
//   mpirun -np P kmeans_mpi POINTS DIM K ITERATIONS SEED
//
// The same points (apps/kmeans/lloyd.h: the same generator, the same
// assignment loop) in contiguous shares, one per rank, generated before the
// timed steps; each step assigns the rank's points and MPI_Allreduces the
// sums and counts (k * dim doubles, k counts, the cost), then every rank
// moves the centroids. Rank 0 prints the cost (which must be fox's: the
// sums are exact) and the times.
#include <mpi.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kmeans/lloyd.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 6) {
    if (rank == 0) std::fprintf(stderr, "usage: kmeans_mpi POINTS DIM K ITERATIONS SEED\n");
    MPI_Finalize();
    return 2;
  }
  kmeans::Config c;
  c.points = std::strtoull(argv[1], nullptr, 10);
  c.dim = std::strtoull(argv[2], nullptr, 10);
  c.k = std::strtoull(argv[3], nullptr, 10);
  c.iterations = std::strtoull(argv[4], nullptr, 10);
  c.seed = std::strtoull(argv[5], nullptr, 10);
  double t0 = MPI_Wtime();
  uint64_t first = c.points * uint64_t(rank) / uint64_t(size), end = c.points * uint64_t(rank + 1) / uint64_t(size);
  fox::apps::Dense mine = c.Make(first, end);
  std::vector<double> centroids = kmeans::InitialCentroids(c);
  MPI_Barrier(MPI_COMM_WORLD);
  double t1 = MPI_Wtime();
  uint64_t cost = 0;
  for (uint64_t step = 0; step < c.iterations; ++step) {
    kmeans::Partial p;
    kmeans::Assign(c, centroids, mine.data.data(), mine.count(), &p);
    MPI_Allreduce(MPI_IN_PLACE, p.sums.data(), int(p.sums.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, p.counts.data(), int(p.counts.size()), MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &p.cost, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    centroids = kmeans::Update(c, centroids, p);
    cost = p.cost;
  }
  double t2 = MPI_Wtime();
  if (rank == 0) {
    std::printf("kmeans_mpi: cost %.6f after %" PRIu64 " steps on %d ranks; load %.3f s, steps %.3f s\n",
                double(cost) / 65536.0, c.iterations, size, t1 - t0, t2 - t1);
  }
  MPI_Finalize();
  return 0;
}
