// LinReg by gradient descent as an MPI programmer writes it: the MPI peer
// of apps/linreg in `make bench B=apps` (tests/bench/apps.py).
//
//   mpirun -np P linreg_mpi SAMPLES FEATURES ITERATIONS SEED
//
// The same samples and arithmetic (apps/linreg/gd.h) in contiguous shares,
// one per rank, generated before the timed steps; each step adds the
// rank's gradient terms and MPI_Allreduces them (features + 1 integers),
// then every rank updates w. Rank 0 prints the error (which must be fox's)
// and the times.
#include <mpi.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "linreg/gd.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 5) {
    if (rank == 0) std::fprintf(stderr, "usage: linreg_mpi SAMPLES FEATURES ITERATIONS SEED\n");
    MPI_Finalize();
    return 2;
  }
  linreg::Config c;
  c.samples = std::strtoull(argv[1], nullptr, 10);
  c.features = std::strtoull(argv[2], nullptr, 10);
  c.iterations = std::strtoull(argv[3], nullptr, 10);
  c.seed = std::strtoull(argv[4], nullptr, 10);
  double t0 = MPI_Wtime();
  uint64_t first = c.samples * uint64_t(rank) / uint64_t(size), end = c.samples * uint64_t(rank + 1) / uint64_t(size);
  fox::apps::Dense mine = c.Make(first, end);
  linreg::LinReg::State s = linreg::LinReg::Initial(c);
  MPI_Barrier(MPI_COMM_WORLD);
  double t1 = MPI_Wtime();
  while (s.step < c.iterations) {
    linreg::Partial p;
    linreg::Accumulate(c, s.w, mine, &p);
    p.each.push_back(p.extra);  // one allreduce: the gradient and the error
    MPI_Allreduce(MPI_IN_PLACE, p.each.data(), int(p.each.size()), MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    p.extra = p.each.back();
    p.each.pop_back();
    linreg::LinReg::Update(c, p, &s);
  }
  double t2 = MPI_Wtime();
  if (rank == 0) {
    std::printf("linreg_mpi: mean squared error %.9f after %" PRIu64 " steps on %d ranks; load %.3f s, steps %.3f s\n",
                double(s.error) / linreg::kErrScale / double(c.samples), s.step, size, t1 - t0, t2 - t1);
  }
  MPI_Finalize();
  return 0;
}
