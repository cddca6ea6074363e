// Team's collectives (team.h, team_tree.cc) over every place, an APGAS
// program of its own, built as a node image and a hosted program.
//
//   team_ops ELEMENTS [MIB]
//
// At every place of a team over all places (at least 4): broadcast from
// place 1, reduce to place 2, gather at place 3, scatter from place 1,
// alltoall, split by the parity of the index (each half then allreduces
// its own), allreduce of ELEMENTS doubles (each element the sum of the
// members' values, exact in a double; each half too), an alltoall in which
// each member sends the next one MIB MiB (a value larger than the largest
// message goes in pieces; 0: none), barrier; then the last place dies
// in an allreduce of ELEMENTS doubles before it contributes: every
// survivor's allreduce throws DeadPlaceException naming it (none hangs). Place 0 checks what
// every place got. Run by hosted_nodes.py and cluster.py (tests.cmake); a
// failed check exits 1 naming what differs.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "check.h"
#include "fox/apgas/apgas.h"
#include "fox/apgas/team.h"
#include "fox/clock.h"

namespace {
using fox::apgas::Place;
using fox::apgas::Team;

#define CHECK(...) FOX_APGAS_CHECK("team_ops", __VA_ARGS__)

std::mutex g_lock;
std::vector<std::string> g_lines;  // at place 0: one per place and part

void Report(const std::string& line) {
  fox::apgas::at(
      Place{0},
      [](std::string l) {
        std::lock_guard<std::mutex> g(g_lock);
        g_lines.push_back(std::move(l));
      },
      line);
}

// Every member's part of the checks; returns what it found wrong ("" if
// nothing).
std::string Member(const std::vector<Place>& group, uint64_t elements, uint64_t mib) {
  Team team(group);
  size_t n = group.size(), me = team.rank();
  std::string wrong;
  auto expect = [&](bool ok, const std::string& what) {
    if (!ok) wrong += (wrong.empty() ? "" : "; ") + what;
  };
  std::string b = team.broadcast(group[1], std::string(me == 1 ? "from one" : "not this"));
  expect(b == "from one", "broadcast gave '" + b + "'");
  auto r = team.reduce(group[2], std::vector<uint64_t>{me, 1}, Team::Sum<uint64_t>());
  expect(me == 2 ? (r && (*r)[0] == n * (n - 1) / 2 && (*r)[1] == n) : !r, "reduce at place 2");
  auto g = team.gather(group[3], std::string("m") + std::to_string(me));
  bool gathered = me == 3 ? g.size() == n : g.empty();
  for (size_t i = 0; me == 3 && gathered && i < n; ++i) gathered = g[i] == "m" + std::to_string(i);
  expect(gathered, "gather at place 3");
  std::vector<uint64_t> deal;
  if (me == 1) {
    for (size_t i = 0; i < n; ++i) deal.push_back(100 + i);
  }
  uint64_t dealt = team.scatter(group[1], deal);
  expect(dealt == 100 + me, "scatter gave " + std::to_string(dealt));
  std::vector<uint64_t> out;
  for (size_t i = 0; i < n; ++i) out.push_back(me * 1000 + i);
  auto in = team.alltoall(out);
  bool swapped = in.size() == n;
  for (size_t i = 0; swapped && i < n; ++i) swapped = in[i] == i * 1000 + me;
  expect(swapped, "alltoall");
  Team half = team.split(int64_t(me % 2), -int64_t(me));  // ordered by descending index
  uint64_t half_sum = half.allreduce(uint64_t(me), Team::Sum<uint64_t>()), want = 0;
  for (size_t i = me % 2; i < n; i += 2) want += i;
  expect(half.places().size() == (n - me % 2 + 1) / 2 && half.places()[0] == group[(n - 1) - ((n - 1) % 2 != me % 2)] &&
             half_sum == want,
         "split: " + std::to_string(half.places().size()) + " members, sum " + std::to_string(half_sum));
  std::vector<double> big(elements);
  for (uint64_t i = 0; i < elements; ++i) big[i] = double(i % 1024) * double(me + 1);
  // Each half allreduces the array too (5 places: teams of 3 and 2, odd sizes for the array algorithm).
  auto half_big = half.allreduce(big, Team::Sum<double>());
  double half_scale = 0;
  for (size_t i = me % 2; i < n; i += 2) half_scale += double(i + 1);
  bool half_summed = half_big.size() == elements;
  for (uint64_t i = 0; half_summed && i < elements; ++i) half_summed = half_big[i] == double(i % 1024) * half_scale;
  expect(half_summed, "the half's allreduce of " + std::to_string(elements) + " doubles");
  uint64_t start = fox::clock::NowNs();
  auto sum = team.allreduce(big, Team::Sum<double>());
  double took = double(fox::clock::NowNs() - start) / 1e9;
  double scale = double(n * (n + 1) / 2);
  bool summed = sum.size() == elements;
  for (uint64_t i = 0; summed && i < elements; ++i) summed = sum[i] == double(i % 1024) * scale;
  expect(summed, "allreduce of " + std::to_string(elements) + " doubles");
  if (mib > 0) {
    std::vector<std::vector<uint8_t>> pieces(n);
    pieces[(me + 1) % n].resize(mib << 20);
    for (size_t i = 0; i < pieces[(me + 1) % n].size(); ++i) pieces[(me + 1) % n][i] = uint8_t(i * 7 + me);
    auto got = team.alltoall(pieces);
    size_t from = (me + n - 1) % n;
    bool whole = got.size() == n && got[from].size() == (mib << 20);
    for (size_t i = 0; whole && i < got[from].size(); ++i) whole = got[from][i] == uint8_t(i * 7 + from);
    for (size_t i = 0; whole && i < n; ++i) whole = i == from || got[i].empty();
    expect(whole, "alltoall of " + std::to_string(mib) + " MiB");
  }
  team.barrier();
  char line[160];
  std::snprintf(line, sizeof line, "place %u: %s (allreduce of %" PRIu64 " doubles in %.3f s)", group[me].id,
                wrong.empty() ? "right" : wrong.c_str(), elements, took);
  Report(line);
  // The last member dies in an allreduce before it contributes (one that
  // died after sending what the others need from it would leave them
  // their result, rightly: it contributed).
  std::string seen = "no exception";
  try {
    if (me == n - 1) {
      std::printf("team_ops: place %u dies now\n", fox::apgas::here().id);
      std::fflush(stdout);
      std::_Exit(9);
    }
    (void)team.allreduce(big, Team::Sum<double>());
  } catch (const fox::apgas::DeadPlaceException& e) {
    seen = "DeadPlaceException " + std::to_string(e.place().id);
  }
  Report("place " + std::to_string(group[me].id) + " in the allreduce a member died in: " + seen);
  return wrong;
}

void Run(uint64_t elements, uint64_t mib) {
  auto group = fox::apgas::places();
  CHECK(group.size() >= 4, "%zu places: 4 at least", group.size());
  try {
    fox::apgas::finish([&] {
      for (Place p : group) {
        fox::apgas::asyncAt(
            p, [](std::vector<Place> g, uint64_t e, uint64_t m) { (void)Member(g, e, m); }, group, elements, mib);
      }
    });
  } catch (const fox::apgas::MultipleExceptions& e) {
    CHECK(e.DeadPlaces() == e.exceptions().size() && e.HasDeadPlace(group.back()), "%s", e.what());
  }
  size_t right = 0, threw = 0;
  std::lock_guard<std::mutex> g(g_lock);
  for (const std::string& l : g_lines) {
    std::printf("team_ops: %s\n", l.c_str());
    right += l.find(": right (") != std::string::npos;
    threw += l.find(": DeadPlaceException " + std::to_string(group.back().id)) != std::string::npos;
  }
  std::printf("team_ops: %zu of %zu places right; %zu of %zu survivors threw DeadPlaceException(%u)\n", right,
              group.size(), threw, group.size() - 1, group.back().id);
  CHECK(right == group.size() && threw == group.size() - 1, "see above");
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t elements = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1 << 20;
  uint64_t mib = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 0;
  if (elements == 0 || elements > (uint64_t(1) << 26) || mib > 1024) {
    std::printf("team_ops: expected ELEMENTS in 1..2^26 and MIB in 0..1024\n");
    return 2;
  }
  return fox::apgas::Main(argc, argv, [elements, mib] { Run(elements, mib); });
}
