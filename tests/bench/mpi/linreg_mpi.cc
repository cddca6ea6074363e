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
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "linreg/gd.h"
#include "ranks.h"

int main(int argc, char** argv) {
  auto r = mpi_peer::Start(&argc, &argv, 4, "linreg_mpi SAMPLES FEATURES ITERATIONS SEED");
  if (!r) return 2;
  int size = r->size;
  linreg::Config c;
  c.samples = r->args[0];
  c.features = r->args[1];
  c.iterations = r->args[2];
  c.seed = r->args[3];
  double t0 = MPI_Wtime();
  fox::apps::Dense mine = c.Make(r->Begin(c.samples), r->End(c.samples));
  linreg::LinReg::State s = linreg::LinReg::Initial(c);
  MPI_Barrier(MPI_COMM_WORLD);
  double t1 = MPI_Wtime();
  while (s.step < c.iterations) {
    linreg::Partial p;
    linreg::Accumulate(c, s.w, mine, &p);
    mpi_peer::Allreduce(&p);  // the gradient and the error
    linreg::LinReg::Update(c, p, &s);
  }
  double t2 = MPI_Wtime();
  if (r->rank == 0) {
    std::printf("linreg_mpi: mean squared error %.9f after %" PRIu64 " steps on %d ranks; load %.3f s, steps %.6f s\n",
                double(s.error) / linreg::kErrScale / double(c.samples), s.step, size, t1 - t0, t2 - t1);
  }
  MPI_Finalize();
  return 0;
}
