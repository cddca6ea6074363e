// mcphoton: Monte Carlo photon transport (photon.h, MCML's method in one
// slab) as a dataflow of tasks on every place of an APGAS job (the FOX
// report's mcphoton on its DataflowCoordinator: fox/apgas/dataflow.h),
// the same answer with and without places dying.
//
//   fox run mcphoton [--places N] -- [photons=N] [tasks=T] [fanin=F] [seed=X]
//       [mua=A] [mus=S] [g=G] [thickness=D] [check=on|off] [trace=on|off]
//
// T simulate tasks of N/T photon packets each (the first N mod T one more),
// each from its own seed (the run's and its index), then sum tasks F
// inputs at a time up to one: the graph's sink, the whole tally. Workers at
// every place (one per activity core) take the tasks from the Dht's task
// queue; a task whose place dies is queued again (dataflow.h) and, the
// tallies being integers and every batch's draws its own, the answer is
// the same bits. check=on: place 0 then simulates every batch alone and
// compares. trace=on: each place prints "mcphoton: place P ran batch I"
// as it finishes one.
//
// Prints the medium, the fractions of the light reflected, absorbed and
// transmitted with the tally's checksum, the dataflow's figures (tasks,
// runs, queued again, deaths) and, with check=on, the comparison. Exit
// status 0; 1 if the comparison fails or the graph failed (place 0 died,
// the Dht lost a result); 2 for bad arguments.
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "../common/args.h"
#include "fox/apgas/apgas.h"
#include "fox/apgas/dataflow.h"
#include "photon.h"

namespace {

using fox::apgas::Place;
using fox::apps::photon::Medium;
using fox::apps::photon::Tally;
namespace dataflow = fox::apgas::dataflow;

constexpr uint32_t kSimulate = 1, kSum = 2;
bool g_trace = false;  // trace=on, set by main at every place (each parses the same arguments)
constexpr const char* kName = "mcphoton";

// A simulate task's argument: the medium, its packets and seed, as text
// (%.17g: every double read back exactly).
std::string SimulateArg(const Medium& m, uint64_t photons, uint64_t seed) {
  char arg[256];
  std::snprintf(arg, sizeof arg, "%.17g %.17g %.17g %.17g %u %u %.17g %" PRIu64 " %" PRIu64, m.mua, m.mus, m.g,
                m.thickness, m.nz, m.nr, m.dr, photons, seed);
  return arg;
}

bool ParseSimulate(const std::string& arg, Medium* m, uint64_t* photons, uint64_t* seed) {
  return std::sscanf(arg.c_str(), "%lg %lg %lg %lg %u %u %lg %" SCNu64 " %" SCNu64, &m->mua, &m->mus, &m->g,
                     &m->thickness, &m->nz, &m->nr, &m->dr, photons, seed) == 9 &&
         fox::apps::photon::Valid(*m);
}

// The workers' function: a batch simulated, or tallies summed (the sum's
// argument: the grid, "NZ NR").
std::string RunTask(const dataflow::Task& task, const std::vector<std::string>& inputs) {
  Medium m;
  if (task.kind == kSimulate) {
    uint64_t photons = 0, seed = 0;
    if (!ParseSimulate(task.arg, &m, &photons, &seed)) throw std::invalid_argument("mcphoton: a malformed batch");
    Tally t(m);
    fox::apps::photon::Simulate(m, photons, seed, &t);
    if (g_trace) {
      std::printf("mcphoton: place %u ran batch %" PRIu64 "\n", fox::apgas::here().id, task.id);
      std::fflush(stdout);
    }
    return t.Bytes();
  }
  if (task.kind != kSum || std::sscanf(task.arg.c_str(), "%u %u", &m.nz, &m.nr) != 2 || !fox::apps::photon::Valid(m)) {
    throw std::invalid_argument("mcphoton: a task of unknown kind or grid");
  }
  Tally sum(m);
  for (const std::string& in : inputs) {
    Tally t(m);
    if (!t.FromBytes(in)) throw std::invalid_argument("mcphoton: an input that is not a tally");
    sum.Add(t);
  }
  return sum.Bytes();
}

uint64_t BatchSeed(uint64_t seed, uint64_t i) { return seed * 0x9e3779b97f4a7c15ull + i * 0xd1b54a32d192ed03ull; }

// T batches, then sums F at a time; the sink is the last task.
std::vector<dataflow::Task> Graph(const Medium& m, uint64_t photons, uint64_t batches, uint64_t fanin, uint64_t seed) {
  std::vector<dataflow::Task> tasks;
  std::vector<uint64_t> level;
  for (uint64_t i = 0; i < batches; ++i) {
    uint64_t n = photons / batches + (i < photons % batches ? 1 : 0);
    tasks.push_back({i, kSimulate, {}, SimulateArg(m, n, BatchSeed(seed, i))});
    level.push_back(i);
  }
  const std::string grid = std::to_string(m.nz) + " " + std::to_string(m.nr);
  while (level.size() > 1 || tasks.back().kind == kSimulate) {
    std::vector<uint64_t> next;
    for (size_t i = 0; i < level.size(); i += fanin) {
      dataflow::Task sum{tasks.size(), kSum, {}, grid};
      for (size_t j = i; j < level.size() && j < i + fanin; ++j) sum.inputs.push_back(level[j]);
      next.push_back(sum.id);
      tasks.push_back(std::move(sum));
    }
    level = std::move(next);
  }
  return tasks;
}

struct Config {
  Medium m;
  uint64_t photons = 1'000'000, batches = 64, fanin = 8, seed = 1;
  bool check = false;
};

void Run(const Config& c) {
  std::vector<Place> live;
  for (Place p : fox::apgas::places()) {
    if (!fox::apgas::isDead(p)) live.push_back(p);
  }
  std::printf("mcphoton: slab of %g cm, mua %g/cm, mus %g/cm, g %g; %" PRIu64 " photons in %" PRIu64
              " batches, sums of %" PRIu64 ", over %zu places\n",
              c.m.thickness, c.m.mua, c.m.mus, c.m.g, c.photons, c.batches, c.fanin, live.size());
  std::fflush(stdout);
  auto tasks = Graph(c.m, c.photons, c.batches, c.fanin, c.seed);
  dataflow::Stats stats;
  std::map<uint64_t, std::string> sinks;
  bool coordinated = false;
  try {
    fox::apgas::finish([&] {
      for (Place p : live) {
        fox::apgas::asyncAt(
            p, [](std::string name) { dataflow::Work(name, &RunTask); }, std::string(kName));
      }
      sinks = dataflow::Coordinate(kName, tasks, &stats);
      coordinated = true;
    });
  } catch (const fox::apgas::MultipleExceptions& e) {
    // Workers at places that died: their tasks ran again elsewhere.
    if (!coordinated || e.DeadPlaces() != e.exceptions().size()) throw;
  }
  Tally total(c.m);
  if (sinks.size() != 1 || !total.FromBytes(sinks.begin()->second)) throw std::runtime_error("mcphoton: no tally came");
  double n = double(total.photons);
  std::printf("mcphoton: %" PRIu64
              " photons: diffuse reflectance %.6f, absorbed %.6f, transmittance %.6f "
              "(tally checksum %016" PRIx64 ")\n",
              total.photons, Tally::Sum(total.reflected) / n, Tally::Sum(total.absorbed) / n,
              Tally::Sum(total.transmitted) / n, total.Checksum());
  std::printf("mcphoton: dataflow: %" PRIu64 " tasks, %" PRIu64 " runs, %" PRIu64 " queued again after %" PRIu64
              " places died, %.3f s\n",
              stats.tasks, stats.runs, stats.requeued, stats.deaths, stats.seconds);
  if (!c.check) return;
  Tally alone(c.m);
  for (const auto& t : tasks) {
    Tally batch(c.m);
    if (t.kind == kSimulate && batch.FromBytes(RunTask(t, {}))) alone.Add(batch);
  }
  bool same = alone.Bytes() == total.Bytes();
  std::printf("mcphoton: computed alone at place 0: %s\n", same ? "the same tallies" : "DIFFERENT TALLIES");
  if (!same) throw std::runtime_error("mcphoton: the tallies differ from place 0's alone");
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  std::string check = "off", trace = "off";
  fox::apps::Args args("mcphoton");
  args.UInt("photons", &c.photons, 1, uint64_t(1) << 40)
      .UInt("tasks", &c.batches, 1, 1 << 16)
      .UInt("fanin", &c.fanin, 2, 1024)
      .UInt("seed", &c.seed, 0, UINT64_MAX)
      .Real("mua", &c.m.mua, 0, 1e6)
      .Real("mus", &c.m.mus, 0, 1e6)
      .Real("g", &c.m.g, -0.99, 0.99)
      .Real("thickness", &c.m.thickness, 1e-6, 1e3)
      .Choice("check", &check, "on|off")
      .Choice("trace", &trace, "on|off");
  if (!args.Parse(argc, argv)) return 2;
  if (!fox::apps::photon::Valid(c.m)) {
    std::printf("mcphoton: bad arguments: mua + mus must be positive\n");
    return 2;
  }
  c.check = check == "on";
  g_trace = trace == "on";
  return fox::apgas::Main(argc, argv, [c] { Run(c); });
}
