// Resilient iterative applications ("Failure Recovery in Resilient X10",
// §3): an app states its step, when it is finished, what a checkpoint
// holds and how it comes back; an executor runs it, checkpoints it every
// so many steps and, when a place dies, rebuilds the group of places
// (PlaceManager: a spare takes the dead place's index, or the group
// shrinks), has the app remake its data over the new group and restore the
// last checkpoint, and goes on from there.
//
// Two executors, as the report's:
//   GlobalExecutor  place 0 drives each step (the app's step() spreads the
//                   work over the places with finish/asyncAt);
//   SpmdExecutor    every place runs its own loop over its part, with Team
//                   collectives; a checkpoint counts once every member has
//                   saved (a Team barrier after the saves, which throws if a
//                   member died first), else the previous one is kept.
//
//   struct MyApp : IterativeApp { ... };              // apps/common/map_reduce.h has one
//   PlaceManager pm;                                  // the job's spares (fox run --spares S)
//   GlobalExecutor exec(pm, {.checkpoint_every = 10});
//   exec.run(app);                                    // returns when app.isFinished()
//
// Checkpoints (Snapshot) are double buffered in a BuddyStore (each place's
// parts kept at the place and at its buddy: a survivor restores its own
// locally): a
// snapshot is the last one only once every place of the group saved its
// part (committed by the executor at place 0), so a place dying during a
// checkpoint leaves the previous one whole; values carry their snapshot's
// version, so a key a later snapshot did not write reads as absent, never
// as an older value. A snapshot names the group it was taken over; restore
// reads a part by its index in that group (Snapshot::load), also the part
// of a place that is dead.
//
// Interval: every `checkpoint_every` steps, or (0) from Young's formula,
// sqrt(2 C M) for a checkpoint time C (measured, the longest over the
// places) and a mean time between failures M (`mtbf_s`), in steps of the
// measured mean step time; steps between checkpoints at least 1.
//
// Recovery: a step, checkpoint or restore that throws only
// DeadPlaceExceptions (also inside MultipleExceptions) is a failure: the
// executor rebuilds the group, remakes, restores the last checkpoint and
// goes on from its step. Anything else the app throws ends run() with that
// exception. When the group cannot be rebuilt (no spare left and no
// shrinking) run() throws the DeadPlaceException. A recovery that used
// spares asks the frontend for as many new ones (top_up_spares). Place 0
// never dies (its death ends the job).
//
// Fault injection (tests and the fault campaign), as Resilient X10's
// executors' kill steps: the boot argument fox.kill_at=PLACE:PHASE:N[,...]
// (the same at every place) makes place PLACE exit (std::_Exit) during a
// phase: `step:N` (step N, from 0), `checkpoint:N` (the checkpoint taken
// after N steps; SPMD: once the place saved its part) or `restore:N` (the
// N-th restore, from 1). What the place sent before it is sent: it exits
// once its large messages read out of its memory were read (up to 1 s).
//
// Event context inside an activity (place 0 for run()); blocks the caller.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fox/apgas/apgas.h"
#include "fox/apgas/buddy_store.h"
#include "fox/apgas/global.h"
#include "fox/apgas/place_manager.h"
#include "fox/apgas/store.h"
#include "fox/apgas/team.h"
#include "fox/clock.h"

namespace fox::apgas {

// A checkpoint: what each place of a group saved. A small value that
// travels in closures; its contents are in the BuddyStore.
class Snapshot {
 public:
  Snapshot() = default;
  // This place's `key` in this snapshot (a value cereal serializes:
  // numbers, strings, containers, structs with serialize; of any size).
  // At a place of the group, while the snapshot is taken.
  template <class T>
  void save(const std::string& key, const T& value) const {
    Store().Set(Key(key), SavedRef<T>{version_, value});  // Saved<T>'s bytes, packed into the backup's message
  }
  // The `key` saved by the place at `index` of the group (also a dead
  // one's), or nullopt if it saved none in this snapshot. Any place.
  template <class T>
  std::optional<T> load(size_t index, const std::string& key) const {
    if (index >= places_.size()) throw std::out_of_range("Snapshot::load: index beyond the snapshot's group");
    auto saved = Store().GetRemote<Saved<T>>(places_[index], Key(key));
    if (!saved || saved->version != version_) return std::nullopt;
    return std::move(saved->value);
  }
  // The group the snapshot was taken over, and the steps done before it.
  const std::vector<Place>& places() const { return places_; }
  long step() const { return step_; }
  uint64_t version() const { return version_; }

  template <class A>
  void serialize(A& ar) {
    ar(name_, version_, step_, places_);
  }

 private:
  friend class Checkpoints;
  Snapshot(std::string name, uint64_t version, long step, std::vector<Place> places)
      : name_(std::move(name)), version_(version), step_(step), places_(std::move(places)) {}
  template <class T>
  struct Saved {
    uint64_t version = 0;
    T value{};
    template <class A>
    void serialize(A& ar) {
      ar(version, value);
    }
  };
  template <class T>
  struct SavedRef {  // what save writes: Saved<T>'s fields
    uint64_t version;
    const T& value;
    template <class A>
    void serialize(A& ar) {
      ar(version, value);
    }
  };
  BuddyStore Store() const { return BuddyStore::Make(name_); }
  std::string Key(const std::string& key) const { return "b" + std::to_string(version_ % 2) + "/" + key; }

  std::string name_;
  uint64_t version_ = 0;  // 1, 2, ...: the buffer is version % 2
  long step_ = 0;
  std::vector<Place> places_;
};

// The snapshots of one executor, at place 0: the next version to give,
// the last whole snapshot.
class Checkpoints {
 public:
  explicit Checkpoints(std::string store) : store_(std::move(store)) {}
  // Snapshot `version` over `group` after `step` steps. Versions are never
  // given twice (Begin: the next; the SPMD executor's places number theirs
  // from next_version() and Skip past them), so nothing of an abandoned
  // snapshot reads as a later one's.
  Snapshot Begin(long step, const std::vector<Place>& group) { return Numbered(next_++, step, group); }
  Snapshot Numbered(uint64_t version, long step, const std::vector<Place>& group) const {
    return Snapshot(store_, version, step, group);
  }
  void Skip(uint64_t version) { next_ = std::max(next_, version + 1); }
  uint64_t next_version() const { return next_; }
  // Every place of its group saved `s`: it is the last one.
  void Commit(const Snapshot& s) { last_ = s; }
  const std::optional<Snapshot>& last() const { return last_; }

 private:
  std::string store_;
  uint64_t next_ = 1;
  std::optional<Snapshot> last_;
};

struct IterativeOptions {
  long checkpoint_every = 10;  // steps between checkpoints; 0: Young's formula with mtbf_s
  double mtbf_s = 60;          // mean time between failures, for Young's formula
  std::string store = "iterative";
  // After a recovery that used spares, ask the frontend for as many new
  // places (PlaceManager::addPlaces), so that the next failure finds a
  // spare too. Without a frontend to ask (a job not started by fox run)
  // this is said once and the run goes on.
  bool top_up_spares = true;
  // Place 0 prints "iterative: step N done at unix T" after each step
  // (hosted builds: the realtime clock; the bench's timeline charts).
  bool trace = false;
  uint64_t top_up_timeout_ms = 60'000;
  template <class A>
  void serialize(A& ar) {
    ar(checkpoint_every, mtbf_s, store, top_up_spares, top_up_timeout_ms, trace);
  }
};

// What an executor did, and the time it took (ns).
struct IterativeStats {
  long steps = 0;               // steps that completed, those redone after a failure included
  long checkpoints = 0;         // committed
  long failures = 0;            // phases that failed for a death
  long restores = 0;            // restores begun
  uint64_t step_ns = 0;         // in steps that completed
  uint64_t checkpoint_ns = 0;   // in checkpoints that committed
  uint64_t lost_ns = 0;         // in phases that failed (the detection of the death included)
  uint64_t rebuild_ns = 0;      // PlaceManager::rebuildActivePlaces
  uint64_t remake_ns = 0;       // the app's remake
  uint64_t restore_ns = 0;      // the app's restore
  long topped_up = 0;           // new spares the frontend gave
  uint64_t top_up_ns = 0;       // waiting for them
  long interval = 0;            // steps between checkpoints, the last chosen
  uint64_t caught_unix_ns = 0;  // when the last failure was caught (the realtime clock; hosted builds, else 0)
};

// A global app: every method is called at place 0 by the executor.
class IterativeApp {
 public:
  virtual ~IterativeApp() = default;
  virtual bool isFinished() = 0;
  // One step over the app's places (its own finish, or asyncs under the
  // executor's).
  virtual void step() = 0;
  // Saves what restore needs into `s`: s.save at each place of the group
  // for its part (asyncAt), or at place 0 for the state it keeps itself.
  virtual void checkpoint(const Snapshot& s) = 0;
  // After a failure: the app's data structures over `places` (the new
  // group; `change` says who left and who came), before restore.
  virtual void remake(const PlaceGroup& places, const PlaceManager::Change& change) = 0;
  // The state of snapshot `s` (taken after s.step() steps), over the group
  // remake was given.
  virtual void restore(const Snapshot& s) = 0;
};

class GlobalExecutor {
 public:
  GlobalExecutor(PlaceManager& manager, IterativeOptions options)
      : manager_(manager), options_(std::move(options)), checkpoints_(options_.store) {}
  // Runs `app` (an IterativeApp, or any type with its methods) to its
  // end, through failures (see the top). The app's data must be over
  // manager.activePlaces() when run begins.
  template <class App>
  void run(App& app);
  const IterativeStats& stats() const { return stats_; }

 private:
  PlaceManager& manager_;
  IterativeOptions options_;
  Checkpoints checkpoints_;
  IterativeStats stats_;
};

namespace detail {
// The phases fox.kill_at names.
enum class Phase { kStep, kCheckpoint, kRestore };
// Exits this place (std::_Exit, after a line on stdout) if fox.kill_at
// names it for `phase` number `n`.
void MaybeDie(Phase phase, long n);
// Whether fox.kill_at names `place` for `phase` number `n`; Die exits
// this place saying so.
bool KillNamed(uint32_t place, Phase phase, long n);
[[noreturn]] void Die(Phase phase, long n);
// Spawns, under the current finish, an activity at each place of `group`
// that fox.kill_at names for (phase, n), which exits there at once. A
// template so that only programs that use it register its closure.
template <class = void>
void KillDuring(const std::vector<Place>& group, Phase phase, long n) {
  for (Place p : group) {
    if (p == here() || !KillNamed(p.id, phase, n)) continue;  // place 0 never dies
    asyncAt(
        p, [](Phase phase, long n) { Die(phase, n); }, phase, n);
  }
}
// True if `e` is a failure the executors recover from: DeadPlaceExceptions
// only (or MultipleExceptions of them).
bool OnlyDeaths(std::exception_ptr e);
// The realtime clock (ns since 1970) in hosted builds, which places on one
// machine share (downtime measurements: fox.kill_at's death, the catch);
// 0 natively.
uint64_t UnixNs();
// IterativeOptions::trace's line for the end of step `steps` (1, 2, ...).
void TraceStep(long steps);
// Young's interval in steps: sqrt(2 C M) / step, at least 1 (1 while no
// step was timed).
long YoungInterval(double checkpoint_s, double mtbf_s, double step_s);
// The group rebuilt after a failure (DeadPlaceException if it cannot be),
// timed into stats.
PlaceManager::Change Rebuild(PlaceManager& manager, IterativeStats* stats);
// In a catch block of an executor: rethrows the exception unless it is a
// failure (OnlyDeaths), else counts it and the time lost since `start`.
void CountFailure(IterativeStats* stats, uint64_t start);
// Both executors' recovery once the group is rebuilt: remake(), then, if
// there is a last snapshot, restore(snapshot, n) (n: this restore's
// number, from 1), each timed into stats. Returns the step to go on from,
// or nullopt when nothing was checkpointed (start again from step 0).
template <class Remake, class Restore>
std::optional<long> RemakeAndRestore(const std::optional<Snapshot>& last, long* restores, IterativeStats* stats,
                                     Remake remake, Restore restore) {
  uint64_t t = clock::NowNs();
  remake();
  stats->remake_ns += clock::NowNs() - t;
  if (!last) return std::nullopt;
  ++*restores;
  ++stats->restores;
  t = clock::NowNs();
  restore(*last, *restores);
  stats->restore_ns += clock::NowNs() - t;
  return last->step();
}
// options.top_up_spares: `used` new spares from the frontend, timed into
// stats; a failure to get them is printed (once), not thrown.
void TopUp(PlaceManager& manager, size_t used, const IterativeOptions& options, IterativeStats* stats);
}  // namespace detail

// An SPMD app: an App at every place of the group, made by the executor:
//   App(const Config& config, const PlaceGroup& group, size_t index)
// with
//   bool isFinished();                    // the same answer at every place
//   void step(Team& team);                // its part of one step
//   void checkpoint(const Snapshot& s);   // saves its part (s.save)
//   void restore(const Snapshot& s);      // its part of s (s.load, by the snapshot group's indices)
//   void remake(const PlaceGroup& group, size_t index);  // a survivor's part in a new group
// Config is any sendable value (the app's arguments). A place that joins
// the group after a failure is made anew from Config, then restores.
template <class App>
class SpmdExecutor {
 public:
  SpmdExecutor(PlaceManager& manager, IterativeOptions options)
      : manager_(manager), options_(std::move(options)), checkpoints_(options_.store) {}

  // Makes the App at every active place from `config`, runs them to their
  // end through failures, then calls done(place 0's App) and frees them.
  template <class Config, class Done>
  void run(const Config& config, Done&& done);
  const IterativeStats& stats() const { return stats_; }

 private:
  // Place 0's executor, as the places' loops report to it.
  struct Progress {
    Checkpoints* checkpoints;
    IterativeStats* stats;
    uint64_t begun = 0;  // the last snapshot version place 0 began
  };
  // One place's loop from `step` (a checkpoint first unless `restored`).
  static void Loop(PlaceLocal<App> apps, const std::vector<Place>& group, long step, bool restored, uint64_t version,
                   const IterativeOptions& options, GlobalRef<Progress> progress);

  PlaceManager& manager_;
  IterativeOptions options_;
  Checkpoints checkpoints_;
  IterativeStats stats_;
};

// ---- GlobalExecutor::run ----

template <class App>
void GlobalExecutor::run(App& app) {
  using detail::Phase;
  long step = 0, restores = 0;
  long interval = options_.checkpoint_every > 0 ? options_.checkpoint_every : 1;
  long since = interval;  // a checkpoint before the first step
  bool recover = false;
  for (;;) {
    uint64_t start = clock::NowNs();
    PlaceManager::Change change;
    if (recover) change = detail::Rebuild(manager_, &stats_);  // its DeadPlaceException ends run
    size_t used = change.added.size();
    PlaceGroup group = manager_.activePlaces();
    std::vector<Place> members(group.begin(), group.end());
    try {
      if (recover) {
        recover = false;
        auto from = detail::RemakeAndRestore(
            checkpoints_.last(), &restores, &stats_, [&] { app.remake(group, change); },
            [&](const Snapshot& s, long n) {
              finish([&] {
                detail::KillDuring(members, Phase::kRestore, n);
                app.restore(s);
              });
            });
        step = from.value_or(0);
        since = from ? 0 : interval;
        detail::TopUp(manager_, used, options_, &stats_);
        continue;
      }
      if (app.isFinished()) return;
      if (since >= interval) {
        Snapshot s = checkpoints_.Begin(step, members);
        finish([&] {
          detail::KillDuring(members, Phase::kCheckpoint, step);
          app.checkpoint(s);
        });
        checkpoints_.Commit(s);
        uint64_t took = clock::NowNs() - start;
        ++stats_.checkpoints;
        stats_.checkpoint_ns += took;
        if (options_.checkpoint_every == 0) {
          double step_s = stats_.steps ? double(stats_.step_ns) / 1e9 / double(stats_.steps) : 0;
          interval = detail::YoungInterval(double(took) / 1e9, options_.mtbf_s, step_s);
        }
        stats_.interval = interval;
        since = 0;
        start = clock::NowNs();
      }
      finish([&] {
        detail::KillDuring(members, Phase::kStep, step);
        app.step();
      });
      ++stats_.steps;
      stats_.step_ns += clock::NowNs() - start;
      ++step;
      ++since;
      if (options_.trace) detail::TraceStep(step);
    } catch (...) {
      detail::CountFailure(&stats_, start);
      recover = true;
    }
  }
}

// ---- SpmdExecutor's templates ----

template <class App>
void SpmdExecutor<App>::Loop(PlaceLocal<App> apps, const std::vector<Place>& group, long step, bool restored,
                             uint64_t version, const IterativeOptions& options, GlobalRef<Progress> progress) {
  App* app = apps();
  Team team(group);
  long interval = options.checkpoint_every > 0 ? options.checkpoint_every : 1;
  long since = restored ? 0 : interval;
  uint64_t step_ns = 0;
  long timed = 0;
  bool zero = here() == group.front();  // place 0: reports to the executor
  while (!app->isFinished()) {
    if (since >= interval) {  // a checkpoint that counts once every member saved its part
      uint64_t start = clock::NowNs();
      Snapshot s = Checkpoints(options.store).Numbered(version, step, group);
      if (zero) progress()->begun = version;
      ++version;
      app->checkpoint(s);
      detail::MaybeDie(detail::Phase::kCheckpoint, step);
      team.barrier();  // DeadPlaceException at every member if one died before it saved
      double took_s = double(clock::NowNs() - start) / 1e9;
      if (options.checkpoint_every == 0) {  // Young's, from the slowest place's times
        auto slowest = team.allreduce(std::vector<double>{took_s, timed ? double(step_ns) / 1e9 / double(timed) : 0},
                                      Team::Max<double>());
        interval = detail::YoungInterval(slowest[0], options.mtbf_s, slowest[1]);
      }
      if (zero) {
        Progress* p = progress();
        p->checkpoints->Commit(s);
        p->stats->checkpoints++;
        p->stats->checkpoint_ns += clock::NowNs() - start;
        p->stats->interval = interval;
      }
      since = 0;
    }
    detail::MaybeDie(detail::Phase::kStep, step);
    uint64_t start = clock::NowNs();
    app->step(team);
    uint64_t took = clock::NowNs() - start;
    step_ns += took;
    ++timed;
    ++step;
    ++since;
    if (zero) {
      progress()->stats->steps++;
      progress()->stats->step_ns += took;
      if (options.trace) detail::TraceStep(step);
    }
  }
}

template <class App>
template <class Config, class Done>
void SpmdExecutor<App>::run(const Config& config, Done&& done) {
  Progress progress{&checkpoints_, &stats_};
  GlobalRef<Progress> ref(&progress);
  PlaceGroup group = manager_.activePlaces();
  auto apps = PlaceLocal<App>::Fresh();
  auto make = [](PlaceLocal<App> apps, std::vector<Place> members, const Config& config) {
    PlaceGroup g(members);
    size_t index = size_t(g.indexOf(here()));
    if (App* app = apps.find()) {
      app->remake(g, index);
    } else {
      apps.set(std::make_shared<App>(config, g, index));
    }
  };
  std::vector<Place> members(group.begin(), group.end());
  finish([&] {
    for (Place p : members) asyncAt(p, make, apps, members, config);
  });
  bool recover = false;
  long step = 0, restores = 0;
  bool restored = false;
  for (;;) {
    uint64_t start = clock::NowNs();
    size_t used = 0;
    if (recover) {
      used = detail::Rebuild(manager_, &stats_).added.size();  // its DeadPlaceException ends run
      group = manager_.activePlaces();
      members.assign(group.begin(), group.end());
    }
    try {
      if (recover) {
        recover = false;
        auto from = detail::RemakeAndRestore(
            checkpoints_.last(), &restores, &stats_,
            [&] {
              finish([&] {
                for (Place p : members) asyncAt(p, make, apps, members, config);
              });
            },
            [&](const Snapshot& s, long n) {
              finish([&] {
                for (Place p : members) {
                  asyncAt(
                      p,
                      [](PlaceLocal<App> apps, const Snapshot& s, long n) {
                        detail::MaybeDie(detail::Phase::kRestore, n);
                        apps()->restore(s);
                      },
                      apps, s, n);
                }
              });
            });
        step = from.value_or(0);
        restored = from.has_value();
        detail::TopUp(manager_, used, options_, &stats_);
      }
      uint64_t first = checkpoints_.next_version();
      progress.begun = first - 1;
      finish([&] {
        for (Place p : members) {
          asyncAt(
              p,
              [](PlaceLocal<App> apps, const std::vector<Place>& group, long step, bool restored, uint64_t version,
                 const IterativeOptions& options,
                 GlobalRef<Progress> progress) { Loop(apps, group, step, restored, version, options, progress); },
              apps, members, step, restored, first, options_, ref);
        }
      });
      checkpoints_.Skip(progress.begun);
      break;
    } catch (...) {
      detail::CountFailure(&stats_, start);
      // The others may have begun one snapshot more than place 0.
      checkpoints_.Skip(progress.begun + 1);
      recover = true;
    }
  }
  done(*apps());
  std::vector<Place> live;
  for (Place p : members) {
    if (!isDead(p)) live.push_back(p);
  }
  apps.Destroy(live);
}

}  // namespace fox::apgas
