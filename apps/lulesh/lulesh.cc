// lulesh: LULESH 2.0's Sedov blast problem (LLNL's proxy application of
// Lagrangian shock hydrodynamics; hydro.h) over the places of an APGAS
// job, resilient through the SPMD executor (fox/apgas/iterative.h): the
// problem's d^3 subdomains dealt to the active places, neighbours
// exchanging nodal forces and velocity gradients each step (subdomains.h),
// checkpointed every few steps, a dead place's subdomains taken by a spare
// or dealt again over the survivors.
//
//   fox run lulesh [--places N] [--spares S] -- [size=S] [domains=D]
//       [iterations=I] [every=N] [mtbf=SECONDS] [shrink=1|0] [check=1|0] [trace=1|0]
//       [executor=spmd]
//
// size: elements per edge of a subdomain (LULESH's -s), domains: subdomains
// per edge (d: LULESH run on d^3 ranks), iterations: a cap (0: to the stop
// time, LULESH's default). The answer's bits do not depend on how many
// places hold the subdomains (hydro.h: shared nodes summed in one order),
// so a run through failures must match the same problem at place 0 alone
// bit for bit (check=1). Prints LULESH's figures: the iteration count and
// the final origin energy. Exit status 0; 1 on a mismatch or a failure it
// could not recover from; 2 for bad arguments.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "../common/args.h"
#include "../common/map_reduce.h"
#include "fox/apgas/apgas.h"
#include "fox/apgas/iterative.h"
#include "fox/clock.h"
#include "subdomains.h"

namespace {

struct Answer {
  uint64_t cycle = 0;
  double time = 0, energy = 0;
  bool operator==(const Answer& o) const {
    return cycle == o.cycle && std::memcmp(&time, &o.time, sizeof time) == 0 &&
           std::memcmp(&energy, &o.energy, sizeof energy) == 0;
  }
};

Answer AnswerOf(const lulesh::Subdomains& s) {
  const lulesh::Domain* d = s.first();
  if (d == nullptr) throw std::logic_error("lulesh: place 0 does not hold subdomain 0");
  return Answer{d->cycle(), d->time(), d->OriginEnergy()};
}

void Print(const Answer& a) {
  std::printf("lulesh: iteration count %" PRIu64 ", final origin energy %12.6e (%a), time %.6e\n", a.cycle, a.energy,
              a.energy, a.time);
}

void Run(const lulesh::Config& c, const fox::apps::RunOptions& o) {
  fox::apgas::PlaceManager manager(fox::apgas::PlaceManager::JobSpares(), o.shrink != 0);
  uint64_t count = c.domains * c.domains * c.domains;
  std::printf("lulesh: %" PRIu64 " subdomains of %" PRIu64 "^3 elements (a mesh of %" PRIu64
              "^3) over %zu places (%zu spares), %s\n",
              count, c.size, c.size * c.domains, manager.activePlaces().size(), manager.spares().size(),
              o.Interval().c_str());
  uint64_t start = fox::clock::NowNs();
  Answer answer;
  fox::apgas::SpmdExecutor<lulesh::Subdomains> exec(manager, o.Iterative("lulesh"));
  try {
    exec.run(c, [&](lulesh::Subdomains& s) { answer = AnswerOf(s); });
  } catch (const fox::apgas::DeadPlaceException& e) {
    o.SayUnrecovered("lulesh", e);
    throw;
  }
  double total_s = double(fox::clock::NowNs() - start) / 1e9;
  Print(answer);
  fox::apps::PrintRun("lulesh", total_s, exec.stats(), manager);
  if (o.check) {
    lulesh::Subdomains all(c);
    while (!all.isFinished()) all.step(nullptr);
    Answer ref = AnswerOf(all);
    bool same = ref == answer;
    std::printf("lulesh: %s the run at one place\n", same ? "the same as" : "DIFFERS from");
    if (!same) {
      Print(ref);
      throw std::runtime_error("lulesh: the answer differs from the one-place run");
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  lulesh::Config c;
  c.size = 10;
  c.domains = 2;
  fox::apps::RunOptions o;
  fox::apps::Args args("lulesh");
  args.UInt("size", &c.size, 1, 200)
      .UInt("domains", &c.domains, 1, 16)
      .UInt("iterations", &c.iterations, 0, 1'000'000)
      .UInt("every", &o.every, 0, 1'000'000)
      .Real("mtbf", &o.mtbf, 0.001, 1e9)
      .UInt("shrink", &o.shrink, 0, 1)
      .UInt("check", &o.check, 0, 1)
      .UInt("trace", &o.trace, 0, 1)
      .Choice("executor", &o.executor, "spmd");  // a stencil's: every place its own loop
  o.executor = "spmd";
  if (!args.Parse(argc, argv)) return 2;
  return fox::apgas::Main(argc, argv, [c, o] { Run(c, o); });
}
