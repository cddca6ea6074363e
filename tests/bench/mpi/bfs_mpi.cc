// Graph500's BFS as an MPI programmer writes a 1-D direction-optimizing
// search: the MPI peer of apps/bfs in `make bench B=irregular`
// (tests/bench/irregular.py).
//
//   mpirun -np P bfs_mpi SCALE EDGEFACTOR ROOTS SEED CHECK
//
// The graph, the roots, the partition and the search loop are bfs's
// (apps/bfs/search.h, the same code): what differs is how bytes move. A
// top-down level's (vertex, parent) pairs go in one MPI_Alltoall of the
// counts and one MPI_Alltoallv; a bottom-up level's frontier bitmap is
// gathered by MPI_Allgather; the direction's sums are an MPI_Allreduce, the
// time's maximum another; one rank per core (mpirun binds them). Rank 0
// prints what bfs prints, as "bfs_mpi: ...".
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "bfs/search.h"
#include "ranks.h"

namespace {

using namespace fox::apps::bfs;

class MpiComm {
 public:
  MpiComm(int rank, int size) : rank_(uint32_t(rank)), size_(uint32_t(size)) {}
  uint32_t Rank() const { return rank_; }
  uint32_t Parts() const { return size_; }
  std::vector<std::vector<uint32_t>> Alltoall(std::vector<std::vector<uint32_t>> out) {
    std::vector<int> send_counts(size_), recv_counts(size_), send_at(size_), recv_at(size_);
    std::vector<uint32_t> send;
    for (uint32_t p = 0; p < size_; ++p) {
      send_at[p] = int(send.size());
      send_counts[p] = int(out[p].size());
      send.insert(send.end(), out[p].begin(), out[p].end());
    }
    MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
    int total = 0;
    for (uint32_t p = 0; p < size_; ++p) {
      recv_at[p] = total;
      total += recv_counts[p];
    }
    std::vector<uint32_t> recv(size_t(total) + 1);
    MPI_Alltoallv(send.data(), send_counts.data(), send_at.data(), MPI_UINT32_T, recv.data(), recv_counts.data(),
                  recv_at.data(), MPI_UINT32_T, MPI_COMM_WORLD);
    std::vector<std::vector<uint32_t>> in(size_);
    for (uint32_t p = 0; p < size_; ++p)
      in[p].assign(recv.begin() + recv_at[p], recv.begin() + recv_at[p] + recv_counts[p]);
    return in;
  }
  std::vector<uint64_t> Allgather(const std::vector<uint64_t>& mine) {
    std::vector<uint64_t> all(mine.size() * size_);
    MPI_Allgather(mine.data(), int(mine.size()), MPI_UINT64_T, all.data(), int(mine.size()), MPI_UINT64_T,
                  MPI_COMM_WORLD);
    return all;
  }
  std::vector<uint64_t> Sum(const std::vector<uint64_t>& values) {
    std::vector<uint64_t> out(values.size());
    MPI_Allreduce(values.data(), out.data(), int(values.size()), MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    return out;
  }
  double Max(double value) {
    double out;
    MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return out;
  }
  void Barrier() { MPI_Barrier(MPI_COMM_WORLD); }
  uint64_t Workers() const { return 1; }
  template <class F>
  void Parallel(uint64_t count, const F& f) {
    f(0, 0, count);
  }
  uint64_t NowNs() const {
    return uint64_t(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
  }

 private:
  uint32_t rank_, size_;
};

}  // namespace

int main(int argc, char** argv) {
  auto r = mpi_peer::Start(&argc, &argv, 5, "bfs_mpi SCALE EDGEFACTOR ROOTS SEED CHECK(0|1)");
  if (!r) return 2;
  Graph500Run c;
  c.scale = r->args[0];
  c.edgefactor = r->args[1];
  c.roots = r->args[2];
  c.seed = r->args[3];
  c.check = r->args[4] != 0;
  MpiComm comm(r->rank, r->size);
  uint64_t invalid = Graph500(comm, "bfs_mpi", c, std::to_string(r->size) + " ranks");
  MPI_Finalize();
  return invalid == 0 ? 0 : 1;
}
