// kmeans: Lloyd's algorithm over generated points on every place of an
// APGAS job, resilient through the iterative executors
// (fox/apgas/iterative.h): checkpointed every few steps, a dead place's
// work taken by a spare or spread over the survivors.
//
//   fox run kmeans [--places N] [--spares S] -- [points=N] [dim=D] [k=K]
//       [iterations=I] [seed=S] [blocks=B] [executor=global|spmd]
//       [every=N] [mtbf=SECONDS] [shrink=1|0] [check=1|0]
//
// The points (lloyd.h) are generated where they are used, in blocks dealt
// to the active places by index; the initial centroids are the first
// point of each k-th of them. A step assigns every point to its nearest
// centroid at the place holding it (its blocks spread over the place's
// activity cores) and moves each centroid to its points' mean.
// executor=global: place 0 gathers the places' sums each step (at, in a
// finish); spmd: every place runs its own loop and the sums are
// allreduced by a Team. The checkpoint is the centroids and the step
// (points are input: a place that takes over blocks generates them).
// every=N: a checkpoint every N steps, 0: Young's interval for mtbf.
//
// Prints the cost and the centroids, and (check=1) compares them with a
// run of the same steps at place 0 alone: the sums are exact (lloyd.h), so
// a run through failures must match bit for bit. Exit status 0; 1 on a
// mismatch or a failure it could not recover from; 2 for bad arguments.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../common/args.h"
#include "fox/apgas/apgas.h"
#include "fox/apgas/global.h"
#include "fox/apgas/iterative.h"
#include "lloyd.h"

namespace {

using fox::apgas::Place;
using fox::apgas::PlaceGroup;
using fox::apgas::PlaceLocal;
using fox::apgas::Snapshot;
using kmeans::Config;
using kmeans::Part;
using kmeans::Partial;

// This place's part of a step: its blocks over its activity cores.
Partial AssignHere(const Config& c, const Part& part, const std::vector<double>& centroids) {
  std::vector<Partial> per_block(part.blocks.size());
  fox::apgas::finish([&] {
    for (size_t b = 0; b < part.blocks.size(); ++b) {
      fox::apgas::async([&, b] {
        kmeans::Assign(c, centroids, part.data[b].data(), part.data[b].size() / c.dim, &per_block[b]);
      });
    }
  });
  Partial total;
  for (const Partial& p : per_block) total += p;
  return total;
}

// What a checkpoint holds.
struct State {
  std::vector<double> centroids;
  uint64_t cost = 0;
  uint64_t step = 0;
  template <class A>
  void serialize(A& ar) {
    ar(centroids, cost, step);
  }
};

// Makes (or keeps) the part of the place at `index` of `n` at every place
// of `group`.
void PlaceParts(PlaceLocal<Part> parts, const PlaceGroup& group, const Config& c) {
  std::vector<Place> members(group.begin(), group.end());
  fox::apgas::finish([&] {
    for (size_t i = 0; i < members.size(); ++i) {
      fox::apgas::asyncAt(
          members[i],
          [](PlaceLocal<Part> parts, const Config& c, uint64_t index, uint64_t n) {
            Part* part = parts.find();
            if (part == nullptr || !part->Holds(c, index, n)) parts.set(std::make_shared<Part>(c, index, n));
          },
          parts, c, uint64_t(i), uint64_t(members.size()));
    }
  });
}

// The global executor's app: the centroids at place 0, the points in
// parts at every active place.
class GlobalKmeans : public fox::apgas::IterativeApp {
 public:
  GlobalKmeans(const Config& c, const PlaceGroup& group)
      : config_(c), group_(group), parts_(PlaceLocal<Part>::Fresh()) {
    state_.centroids = kmeans::InitialCentroids(c);
    PlaceParts(parts_, group_, config_);
  }
  bool isFinished() override { return state_.step >= config_.iterations; }
  void step() override {
    std::vector<Partial> got(group_.size());
    fox::apgas::finish([&] {
      for (size_t i = 0; i < group_.size(); ++i) {
        fox::apgas::async([&, i] {
          got[i] = fox::apgas::at(
              group_[i],
              [](PlaceLocal<Part> parts, const Config& c, const std::vector<double>& centroids) {
                return AssignHere(c, *parts(), centroids);
              },
              parts_, config_, state_.centroids);
        });
      }
    });
    Partial total;
    for (const Partial& p : got) total += p;
    state_.centroids = kmeans::Update(config_, state_.centroids, total);
    state_.cost = total.cost;
    ++state_.step;
  }
  void checkpoint(const Snapshot& s) override { s.save("state", state_); }
  void remake(const PlaceGroup& group, const fox::apgas::PlaceManager::Change&) override {
    group_ = group;
    PlaceParts(parts_, group_, config_);
  }
  void restore(const Snapshot& s) override {
    auto saved = s.load<State>(0, "state");
    if (!saved) throw std::runtime_error("kmeans: the checkpoint has no state");
    state_ = std::move(*saved);
  }
  const State& state() const { return state_; }

 private:
  Config config_;
  PlaceGroup group_;
  PlaceLocal<Part> parts_;
  State state_;
};

// The SPMD executor's app: at every active place, its part and a copy of
// the centroids (the same at every place after each allreduce).
class SpmdKmeans {
 public:
  SpmdKmeans(const Config& c, const PlaceGroup& group, size_t index)
      : config_(c), index_(index), part_(std::make_unique<Part>(c, index, group.size())) {
    state_.centroids = kmeans::InitialCentroids(c);
  }
  bool isFinished() { return state_.step >= config_.iterations; }
  void step(fox::apgas::Team& team) {
    Partial total = team.allreduce(AssignHere(config_, *part_, state_.centroids), kmeans::Add());
    state_.centroids = kmeans::Update(config_, state_.centroids, total);
    state_.cost = total.cost;
    ++state_.step;
  }
  void checkpoint(const Snapshot& s) {
    if (index_ == 0) s.save("state", state_);  // the same at every place
  }
  void restore(const Snapshot& s) {
    auto saved = s.load<State>(0, "state");
    if (!saved) throw std::runtime_error("kmeans: the checkpoint has no state");
    state_ = std::move(*saved);
  }
  void remake(const PlaceGroup& group, size_t index) {
    index_ = index;
    if (!part_->Holds(config_, index, group.size())) part_ = std::make_unique<Part>(config_, index, group.size());
  }
  const State& state() const { return state_; }

 private:
  Config config_;
  size_t index_;
  std::unique_ptr<Part> part_;
  State state_;
};

// The same steps at this place alone.
State Reference(const Config& c) {
  Part all(c, 0, 1);
  State s;
  s.centroids = kmeans::InitialCentroids(c);
  for (; s.step < c.iterations; ++s.step) {
    Partial total = AssignHere(c, all, s.centroids);
    s.centroids = kmeans::Update(c, s.centroids, total);
    s.cost = total.cost;
  }
  return s;
}

struct Options {
  Config config;
  std::string executor = "global";
  uint64_t every = 10;
  double mtbf = 60;
  uint64_t shrink = 1;
  uint64_t check = 1;
};

void Print(const Config& c, const State& s) {
  std::printf("kmeans: cost %.6f after %" PRIu64 " steps\n", double(s.cost) / 65536.0, s.step);
  for (uint64_t j = 0; j < c.k && j < 16; ++j) {
    std::string line = "kmeans: centroid " + std::to_string(j) + ":";
    for (uint64_t d = 0; d < c.dim && d < 8; ++d) {
      char v[32];
      std::snprintf(v, sizeof v, " %.6f", s.centroids[j * c.dim + d]);
      line += v;
    }
    std::printf("%s\n", line.c_str());
  }
}

// The run by o.executor.
void RunWith(const Options& o, fox::apgas::PlaceManager& manager, const fox::apgas::IterativeOptions& options,
             State* result, fox::apgas::IterativeStats* stats) {
  const Config& c = o.config;
  uint64_t start = fox::clock::NowNs();
  if (o.executor == "global") {
    GlobalKmeans app(c, manager.activePlaces());
    uint64_t loaded = fox::clock::NowNs();
    std::printf("kmeans: points generated in %.3f s\n", double(loaded - start) / 1e9);
    fox::apgas::GlobalExecutor exec(manager, options);
    exec.run(app);
    *result = app.state();
    *stats = exec.stats();
  } else {
    fox::apgas::SpmdExecutor<SpmdKmeans> exec(manager, options);
    exec.run(c, [&](SpmdKmeans& app) { *result = app.state(); });
    *stats = exec.stats();
  }
}

void Run(const Options& o) {
  const Config& c = o.config;
  fox::apgas::PlaceManager manager(fox::apgas::PlaceManager::JobSpares(), o.shrink != 0);
  fox::apgas::IterativeOptions options;
  options.checkpoint_every = long(o.every);
  options.mtbf_s = o.mtbf;
  options.store = "kmeans";
  PlaceGroup group = manager.activePlaces();
  std::printf("kmeans: %" PRIu64 " points of %" PRIu64 " dimensions, k=%" PRIu64 ", %" PRIu64
              " steps over %zu places (%zu spares), %s executor, %s\n",
              c.points, c.dim, c.k, c.iterations, group.size(), manager.spares().size(), o.executor.c_str(),
              o.every ? ("a checkpoint every " + std::to_string(o.every) + " steps").c_str()
                      : "checkpoints at Young's interval");
  uint64_t start = fox::clock::NowNs();
  State result;
  fox::apgas::IterativeStats stats;
  try {
    RunWith(o, manager, options, &result, &stats);
  } catch (const fox::apgas::DeadPlaceException& e) {
    std::printf("kmeans: place %u died and cannot be replaced (no spare left, shrink=%" PRIu64 ")\n", e.place().id,
                o.shrink);
    throw;
  }
  double total_s = double(fox::clock::NowNs() - start) / 1e9;
  Print(c, result);
  std::printf("kmeans: %.3f s; %ld steps (%.3f s), %ld checkpoints (%.3f s; the last interval %ld steps), %ld "
              "failures, %ld restores (rebuild %.3f s, remake %.3f s, restore %.3f s, lost %.3f s); active places "
              "at the end:",
              total_s, stats.steps, double(stats.step_ns) / 1e9, stats.checkpoints,
              double(stats.checkpoint_ns) / 1e9, stats.interval, stats.failures, stats.restores,
              double(stats.rebuild_ns) / 1e9,
              double(stats.remake_ns) / 1e9, double(stats.restore_ns) / 1e9, double(stats.lost_ns) / 1e9);
  for (Place p : manager.activePlaces()) std::printf(" %u", p.id);
  std::printf("\n");
  if (o.check) {
    State ref = Reference(c);
    bool same = ref.cost == result.cost && ref.step == result.step && ref.centroids == result.centroids;
    std::printf("kmeans: %s the run at one place\n", same ? "the same as" : "DIFFERS from");
    if (!same) {
      Print(c, ref);
      throw std::runtime_error("kmeans: the answer differs from the one-place run");
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string executor = o.executor;
  fox::apps::Args args("kmeans");
  args.UInt("points", &o.config.points, 1, uint64_t(1) << 26)
      .UInt("dim", &o.config.dim, 1, 64)
      .UInt("k", &o.config.k, 1, 1024)
      .UInt("iterations", &o.config.iterations, 0, 1'000'000)
      .UInt("seed", &o.config.seed, 0, UINT64_MAX)
      .UInt("blocks", &o.config.blocks, 1, 1 << 16)
      .Choice("executor", &o.executor, "global|spmd")
      .UInt("every", &o.every, 0, 1'000'000)
      .Real("mtbf", &o.mtbf, 0.001, 1e9)
      .UInt("shrink", &o.shrink, 0, 1)
      .UInt("check", &o.check, 0, 1);
  if (!args.Parse(argc, argv)) return 2;
  if (o.config.k > o.config.points) {
    std::printf("kmeans: k=%" PRIu64 " is more than points=%" PRIu64 "\n", o.config.k, o.config.points);
    return 2;
  }
  return fox::apgas::Main(argc, argv, [o] { Run(o); });
}
