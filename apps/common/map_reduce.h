// Iterative apps whose step is a map over the input's blocks and a reduce
// (KMeans, LinReg, PageRank): the app is a model, this file runs it on
// either executor of fox/apgas/iterative.h, checks it against the same
// steps at one place, and prints what the run did.
//
//   struct Model {
//     using Config = ...;    // the arguments and the input (apps/common/blocks.h)
//     using State = ...;     // what a step changes: sendable, checkpointed, has `uint64_t step`
//     using Partial = ...;   // what a place's blocks give a step: sendable, +=, the same
//                            // whatever order the partials are added in
//     static constexpr const char* kName = "kmeans";
//     static State Initial(const Config& c);
//     static void Map(const Config& c, const State& s, const Part<Config>& part, size_t k, Partial* p);  // block k
//     static void Update(const Config& c, const Partial& total, State* s);  // the step's end (s->step++)
//     static uint64_t Steps(const Config& c);                               // how many steps
//     static void Print(const Config& c, const State& s);                   // the answer
//     static size_t Width(const Config& c);  // optional, when Partial is Sums: its `each`'s length
//   };                                       // (the SPMD executor allreduces it as one array)
// State has operator== (the check against one place: bit for bit).
//
// The state lives at place 0 (global executor) or at every place (SPMD:
// the partials are allreduced, so every place computes the same state);
// a checkpoint holds the state only, the input being remade from Config.
#pragma once

#include <cinttypes>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "args.h"
#include "blocks.h"
#include "fox/apgas/apgas.h"
#include "fox/apgas/global.h"
#include "fox/apgas/iterative.h"

namespace fox::apps {

// This place's partial of a step.
template <class M>
typename M::Partial MapHere(const typename M::Config& c, const typename M::State& s,
                            const Part<typename M::Config>& part) {
  return MapBlocks<typename M::Partial>(part, [&](size_t k, typename M::Partial* p) { M::Map(c, s, part, k, p); });
}

template <class M>
typename M::State LoadState(const apgas::Snapshot& s) {
  auto saved = s.load<typename M::State>(0, "state");
  if (!saved) throw std::runtime_error(std::string(M::kName) + ": the checkpoint has no state");
  return std::move(*saved);
}

// The global executor's app: the state at place 0, the input's parts at
// every active place; place 0 gathers the partials each step.
template <class M>
class GlobalMapReduce : public apgas::IterativeApp {
 public:
  using Config = typename M::Config;
  using State = typename M::State;
  using Partial = typename M::Partial;
  GlobalMapReduce(const Config& c, const apgas::PlaceGroup& group)
      : config_(c), group_(group), parts_(apgas::PlaceLocal<Part<Config>>::Fresh()), state_(M::Initial(c)) {
    PlaceParts(parts_, group_, config_);
  }
  bool isFinished() override { return state_.step >= M::Steps(config_); }
  void step() override {
    std::vector<Partial> got(group_.size());
    apgas::finish([&] {
      // The other places' requests first: this place's own part (an `at`
      // here runs at once) would hold its core before they go out.
      std::vector<size_t> order;
      for (size_t i = 0; i < group_.size(); ++i) {
        if (group_[i] != apgas::here()) order.push_back(i);
      }
      for (size_t i = 0; i < group_.size(); ++i) {
        if (group_[i] == apgas::here()) order.push_back(i);
      }
      for (size_t i : order) {
        apgas::async([&, i] {
          got[i] = apgas::at(
              group_[i],
              [](apgas::PlaceLocal<Part<Config>> parts, const Config& c, const State& s) {
                return MapHere<M>(c, s, *parts());
              },
              parts_, config_, state_);
        });
      }
    });
    Partial total{};
    for (Partial& p : got) total += p;
    M::Update(config_, total, &state_);
  }
  void checkpoint(const apgas::Snapshot& s) override { s.save("state", state_); }
  void remake(const apgas::PlaceGroup& group, const apgas::PlaceManager::Change&) override {
    group_ = group;
    PlaceParts(parts_, group_, config_);
  }
  void restore(const apgas::Snapshot& s) override { state_ = LoadState<M>(s); }
  const State& state() const { return state_; }

 private:
  Config config_;
  apgas::PlaceGroup group_;
  apgas::PlaceLocal<Part<Config>> parts_;
  State state_;
};

// The SPMD executor's app: at every active place its part and the state
// (the same everywhere after each allreduce); the place at index 0 saves it.
template <class M>
class SpmdMapReduce {
 public:
  using Config = typename M::Config;
  using State = typename M::State;
  using Partial = typename M::Partial;
  SpmdMapReduce(const Config& c, const apgas::PlaceGroup& group, size_t index)
      : config_(c),
        index_(index),
        part_(std::make_unique<Part<Config>>(c, index, group.size())),
        state_(M::Initial(c)) {}
  bool isFinished() { return state_.step >= M::Steps(config_); }
  void step(apgas::Team& team) {
    struct Add {
      Partial operator()(Partial a, const Partial& b) const { return a += b; }
    };
    Partial mine = MapHere<M>(config_, state_, *part_);
    Partial total;
    if constexpr (requires { M::Width(config_); }) {  // Sums of that width: allreduced as an array
      total = Partial::Unflat(team.allreduce(std::move(mine).Flat(M::Width(config_)), apgas::Team::Sum<int64_t>()));
    } else {
      total = team.allreduce(std::move(mine), Add());
    }
    M::Update(config_, total, &state_);
  }
  void checkpoint(const apgas::Snapshot& s) {
    if (index_ == 0) s.save("state", state_);
  }
  void restore(const apgas::Snapshot& s) { state_ = LoadState<M>(s); }
  void remake(const apgas::PlaceGroup& group, size_t index) {
    index_ = index;
    if (!part_->Holds(config_, index, group.size()))
      part_ = std::make_unique<Part<Config>>(config_, index, group.size());
  }
  const State& state() const { return state_; }

 private:
  Config config_;
  size_t index_;
  std::unique_ptr<Part<Config>> part_;
  State state_;
};

// The same steps at this place alone.
template <class M>
typename M::State Reference(const typename M::Config& c) {
  Part<typename M::Config> all(c, 0, 1);
  typename M::State s = M::Initial(c);
  while (s.step < M::Steps(c)) M::Update(c, MapHere<M>(c, s, all), &s);
  return s;
}

// How to run: the executor and its options (the apps' common arguments).
struct RunOptions {
  std::string executor = "global";  // global|spmd
  uint64_t every = 10;              // steps between checkpoints, 0: Young's
  double mtbf = 60;                 // for Young's
  uint64_t shrink = 1;              // 0: a death without a spare ends the run
  uint64_t check = 1;               // 1: compare with Reference
  uint64_t trace = 0;               // 1: place 0 prints when each step ends (IterativeOptions::trace)
  // Registers executor=, every=, mtbf=, shrink=, check=, trace= with `args`.
  void AddTo(Args& args) {
    args.Choice("executor", &executor, "global|spmd")
        .UInt("every", &every, 0, 1'000'000)
        .Real("mtbf", &mtbf, 0.001, 1e9)
        .UInt("shrink", &shrink, 0, 1)
        .UInt("check", &check, 0, 1)
        .UInt("trace", &trace, 0, 1);
  }
  // The executors' options for app `name` (its checkpoints' store too).
  apgas::IterativeOptions Iterative(const char* name) const {
    apgas::IterativeOptions options;
    options.checkpoint_every = long(every);
    options.mtbf_s = mtbf;
    options.store = name;
    options.trace = trace != 0;
    return options;
  }
  // How often it checkpoints, in words.
  std::string Interval() const {
    return every ? "a checkpoint every " + std::to_string(every) + " steps" : "checkpoints at Young's interval";
  }
  // Says why app `name`'s run ends on a death it cannot recover from.
  void SayUnrecovered(const char* name, const apgas::DeadPlaceException& e) const {
    std::printf("%s: place %u died and cannot be replaced (no spare left, shrink=%" PRIu64 ")\n", name, e.place().id,
                shrink);
  }
};

// The figures of an executor's run (its stats, `total_s` in all) and the
// places active at its end, in one line: "NAME: T s; N steps (...), ...".
inline void PrintRun(const char* name, double total_s, const apgas::IterativeStats& stats,
                     apgas::PlaceManager& manager) {
  std::printf(
      "%s: %.6f s; %ld steps (%.6f s), %ld checkpoints (%.6f s; the last interval %ld steps), %ld "
      "failures, %ld restores (rebuild %.3f s, remake %.3f s, restore %.3f s, lost %.3f s), %ld new spares "
      "(%.3f s); active places at the end:",
      name, total_s, stats.steps, double(stats.step_ns) / 1e9, stats.checkpoints, double(stats.checkpoint_ns) / 1e9,
      stats.interval, stats.failures, stats.restores, double(stats.rebuild_ns) / 1e9, double(stats.remake_ns) / 1e9,
      double(stats.restore_ns) / 1e9, double(stats.lost_ns) / 1e9, stats.topped_up, double(stats.top_up_ns) / 1e9);
  for (apgas::Place p : manager.activePlaces()) std::printf(" %u", p.id);
  std::printf("\n");
  if (stats.failures > 0 && stats.caught_unix_ns != 0) {  // for downtime measurements (tests/bench/apps.py)
    std::printf("%s: the last failure caught at unix %.6f\n", name, double(stats.caught_unix_ns) / 1e9);
  }
}

// Runs model M at place 0 (inside apgas::Main): prints the answer, the
// run's figures, and (check) whether it is the one-place answer; throws
// when it is not, or when a death could not be recovered from.
template <class M>
void RunIterative(const typename M::Config& c, const RunOptions& o) {
  apgas::PlaceManager manager(apgas::PlaceManager::JobSpares(), o.shrink != 0);
  apgas::IterativeOptions options = o.Iterative(M::kName);
  std::printf("%s: %" PRIu64 " steps over %zu places (%zu spares), %s executor, %s\n", M::kName, M::Steps(c),
              manager.activePlaces().size(), manager.spares().size(), o.executor.c_str(), o.Interval().c_str());
  uint64_t start = clock::NowNs();
  typename M::State result;
  apgas::IterativeStats stats;
  try {
    if (o.executor == "global") {
      GlobalMapReduce<M> app(c, manager.activePlaces());
      std::printf("%s: input made in %.3f s\n", M::kName, double(clock::NowNs() - start) / 1e9);
      apgas::GlobalExecutor exec(manager, options);
      exec.run(app);
      result = app.state();
      stats = exec.stats();
    } else {
      apgas::SpmdExecutor<SpmdMapReduce<M>> exec(manager, options);
      exec.run(c, [&](SpmdMapReduce<M>& app) { result = app.state(); });
      stats = exec.stats();
    }
  } catch (const apgas::DeadPlaceException& e) {
    o.SayUnrecovered(M::kName, e);
    throw;
  }
  double total_s = double(clock::NowNs() - start) / 1e9;
  M::Print(c, result);
  PrintRun(M::kName, total_s, stats, manager);
  if (o.check) {
    typename M::State ref = Reference<M>(c);
    bool same = ref == result;
    std::printf("%s: %s the run at one place\n", M::kName, same ? "the same as" : "DIFFERS from");
    if (!same) {
      M::Print(c, ref);
      throw std::runtime_error(std::string(M::kName) + ": the answer differs from the one-place run");
    }
  }
}

}  // namespace fox::apps
