// KMeans as an MPI programmer writes it: the MPI peer of apps/kmeans in
// `make bench B=apps` (tests/bench/apps.py), built there with mpicxx.
//
//   mpirun -np P kmeans_mpi POINTS DIM K ITERATIONS SEED
//
// The same points (apps/kmeans/lloyd.h: the same generator, the same
// assignment loop) in contiguous shares, one per rank, generated before the
// timed steps; each step assigns the rank's points and MPI_Allreduces the
// sums and counts (k * dim integers, k counts, the cost), then every rank
// moves the centroids. Rank 0 prints the cost (which must be fox's: the
// sums are exact) and the times.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kmeans/lloyd.h"
#include "ranks.h"

int main(int argc, char** argv) {
  auto r = mpi_peer::Start(&argc, &argv, 5, "kmeans_mpi POINTS DIM K ITERATIONS SEED");
  if (!r) return 2;
  int rank = r->rank, size = r->size;
  kmeans::Config c;
  c.points = r->args[0];
  c.dim = r->args[1];
  c.k = r->args[2];
  c.iterations = r->args[3];
  c.seed = r->args[4];
  double t0 = MPI_Wtime();
  fox::apps::Dense mine = c.Make(r->Begin(c.points), r->End(c.points));
  std::vector<double> centroids = kmeans::InitialCentroids(c);
  MPI_Barrier(MPI_COMM_WORLD);
  double t1 = MPI_Wtime();
  uint64_t cost = 0;
  for (uint64_t step = 0; step < c.iterations; ++step) {
    kmeans::Partial p;
    kmeans::Assign(c, centroids, mine.data.data(), mine.count(), &p);
    MPI_Allreduce(MPI_IN_PLACE, p.sums.data(), int(p.sums.size()), MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, p.counts.data(), int(p.counts.size()), MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &p.cost, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    centroids = kmeans::Update(c, centroids, p);
    cost = p.cost;
  }
  double t2 = MPI_Wtime();
  if (rank == 0) {
    std::printf("kmeans_mpi: cost %.6f after %" PRIu64 " steps on %d ranks; load %.3f s, steps %.6f s\n",
                double(cost) / 65536.0, c.iterations, size, t1 - t0, t2 - t1);
  }
  MPI_Finalize();
  return 0;
}
