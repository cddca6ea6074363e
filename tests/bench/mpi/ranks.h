// What the MPI peers of tests/bench/apps.py share: MPI's start with the
// numeric arguments, a rank's contiguous share of the rows, and one
// allreduce of an exact partial (apps/common/random.h's Sums).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

#include "common/random.h"

namespace mpi_peer {

struct Ranks {
  int rank = 0, size = 1;
  std::vector<uint64_t> args;  // argv[1..], as numbers
  // This rank's rows of `rows`: [begin, end).
  uint64_t Begin(uint64_t rows) const { return rows * uint64_t(rank) / uint64_t(size); }
  uint64_t End(uint64_t rows) const { return rows * uint64_t(rank + 1) / uint64_t(size); }
};

// MPI_Init, then `nargs` numbers from argv; nullopt (the usage printed by
// rank 0, MPI finalized) when argc says otherwise.
inline std::optional<Ranks> Start(int* argc, char*** argv, int nargs, const char* usage) {
  MPI_Init(argc, argv);
  Ranks r;
  MPI_Comm_rank(MPI_COMM_WORLD, &r.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &r.size);
  if (*argc != nargs + 1) {
    if (r.rank == 0) std::fprintf(stderr, "usage: %s\n", usage);
    MPI_Finalize();
    return std::nullopt;
  }
  for (int i = 1; i <= nargs; ++i) r.args.push_back(std::strtoull((*argv)[i], nullptr, 10));
  return r;
}

// p summed over every rank, in one MPI_Allreduce (each, then extra).
inline void Allreduce(fox::apps::Sums* p) {
  p->each.push_back(p->extra);
  MPI_Allreduce(MPI_IN_PLACE, p->each.data(), int(p->each.size()), MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  p->extra = p->each.back();
  p->each.pop_back();
}

}  // namespace mpi_peer
