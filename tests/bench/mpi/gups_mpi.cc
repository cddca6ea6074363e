// HPCC RandomAccess as an MPI programmer writes it: the MPI peer of
// apps/gups in `make bench B=irregular` (tests/bench/irregular.py).
//
//   mpirun -np P gups_mpi LOG2 CHUNK
//
// The table, the updates and their split are gups's (a table of 2^LOG2
// words over the ranks in blocks, word i starting as i; 4 * 2^LOG2 updates
// of HPCC's generator, apps/gups/hpcc_random.h, one contiguous piece per
// rank). Each rank generates CHUNK updates at a time, buckets them by the
// word's owner, exchanges the bucket sizes (MPI_Alltoall) and the buckets
// (MPI_Alltoallv), and applies what it received: the bucketed exchange of
// HPCC's MPI versions. Every rank goes the same number of rounds (the
// longest piece's). Verification, as gups's: the same updates again, then
// the words not back to their index are counted (MPI_Reduce). Rank 0 prints
// the time of the first pass and its GUP/s, then the errors.
#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "gups/hpcc_random.h"
#include "ranks.h"

namespace {

struct Table {
  uint64_t size, block, begin;
  std::vector<uint64_t> words;
};

void Pass(const mpi_peer::Ranks& r, Table& t, uint64_t chunk) {
  using fox::apps::hpcc::Next;
  const uint64_t updates = 4 * t.size, mask = t.size - 1;
  const uint64_t first = r.Begin(updates), last = r.End(updates);
  const uint64_t longest = updates / uint64_t(r.size) + 1;
  const uint64_t rounds = (longest + chunk - 1) / chunk;
  std::vector<std::vector<uint64_t>> buckets(size_t(r.size));
  std::vector<int> send_counts(size_t(r.size)), recv_counts(size_t(r.size)), send_at(size_t(r.size)),
      recv_at(size_t(r.size));
  std::vector<uint64_t> send, recv;
  uint64_t ran = fox::apps::hpcc::Starts(int64_t(first)), i = first;
  for (uint64_t round = 0; round < rounds; ++round) {
    for (auto& b : buckets) b.clear();
    for (uint64_t end = std::min(last, i + chunk); i < end; ++i) {
      ran = Next(ran);
      buckets[size_t((ran & mask) / t.block)].push_back(ran);
    }
    send.clear();
    for (int p = 0; p < r.size; ++p) {
      send_at[size_t(p)] = int(send.size());
      send_counts[size_t(p)] = int(buckets[size_t(p)].size());
      send.insert(send.end(), buckets[size_t(p)].begin(), buckets[size_t(p)].end());
    }
    MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
    int total = 0;
    for (int p = 0; p < r.size; ++p) {
      recv_at[size_t(p)] = total;
      total += recv_counts[size_t(p)];
    }
    recv.resize(size_t(total));
    MPI_Alltoallv(send.data(), send_counts.data(), send_at.data(), MPI_UINT64_T, recv.data(), recv_counts.data(),
                  recv_at.data(), MPI_UINT64_T, MPI_COMM_WORLD);
    for (uint64_t v : recv) t.words[(v & mask) - t.begin] ^= v;
  }
}

}  // namespace

int main(int argc, char** argv) {
  auto r = mpi_peer::Start(&argc, &argv, 2, "gups_mpi LOG2 CHUNK");
  if (!r) return 2;
  Table t;
  t.size = uint64_t(1) << r->args[0];
  t.block = (t.size + uint64_t(r->size) - 1) / uint64_t(r->size);
  t.begin = std::min(t.size, t.block * uint64_t(r->rank));
  t.words.resize(std::min(t.size, t.begin + t.block) - t.begin);
  for (uint64_t j = 0; j < t.words.size(); ++j) t.words[j] = t.begin + j;
  const uint64_t chunk = std::max<uint64_t>(1, r->args[1]);
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  Pass(*r, t, chunk);
  MPI_Barrier(MPI_COMM_WORLD);
  double seconds = MPI_Wtime() - t0;
  Pass(*r, t, chunk);
  uint64_t wrong = 0, errors = 0;
  for (uint64_t j = 0; j < t.words.size(); ++j) wrong += t.words[j] != t.begin + j;
  MPI_Reduce(&wrong, &errors, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  if (r->rank == 0) {
    std::printf("gups_mpi: table 2^%" PRIu64 " words over %d ranks, %" PRIu64 " updates in %.3f s: %.6f GUP/s\n",
                r->args[0], r->size, 4 * t.size, seconds, double(4 * t.size) / seconds / 1e9);
    std::printf("gups_mpi: verification: %" PRIu64 " errors in %" PRIu64 " words\n", errors, t.size);
  }
  MPI_Finalize();
  return 0;
}
