// Lifeline-based global load balancing (GLB: X10's GLB library, Saraswat et
// al.'s lifeline graphs; the 2017 report §5.2): a computation whose work
// appears as it runs (a tree search) spread over the cores of places by
// work stealing, ended by finish.
//
//   struct Queue {                      // one per worker
//     bool process(uint64_t n);         // up to n items; false once none is left
//     std::optional<Bag> split();       // about half of the work, if there is enough to give
//     void merge(Bag bag);              // work taken from another worker
//     bool empty() const;
//     R result() const;                 // this worker's part of the answer
//   };
//   uint64_t nodes = fox::apgas::glb<Queue, uint64_t>(group, [](uint64_t worker) { return Queue(worker); },
//                                                     [](uint64_t a, uint64_t b) { return a + b; });
//
// Workers: S per place of `group` (GlbParams::slots; by default the calling
// place's activity cores), worker u at group[u / S]; each makes its queue
// with make(u) (the root's work goes in worker 0's); Bag and R are sent
// between places (serialization.h). A worker processes n items at a time
// and between chunks yields its core (its next chunk is a new activity,
// after the requests queued behind it) and gives work to the workers
// waiting on its lifelines. Out of work, it tries w random victims among
// all workers (at its own place directly, elsewhere by a blocking `at`),
// each asked for half its work, then asks its lifelines (the workers whose
// number differs from its own in one of z bits: a hypercube, connected for
// any number of workers) and ends; a lifeline with work, now or later,
// sends it half, which restarts it. When no worker has work, no activity is
// left and glb's finish returns: then the workers' results are reduced at
// the caller, in worker order.
//
// Failures. By default a place that dies loses its work: the others stop
// (each worker within 64 chunks), and glb throws its finish's
// MultipleExceptions (DeadPlaceException). Resilient (GlbParams::resilient;
// Queue then travels too, serialization.h): the run goes in epochs of
// epoch_ms. At an epoch's end every worker stops at its next chunk and
// glb's finish returns with no work in flight (a steal or a deal is an
// activity of it); before each epoch every place saves its workers' queues
// (results included) in a BuddyStore, as one write, under the epoch's
// parity, and the epoch counts as saved once all places did. A death stops
// the epoch (its finish throws); the dead place's workers go to the live
// places, and every worker takes its queue back from the last saved epoch
// (survivors locally, the dead place's from its buddy), so the work since
// is done again and nothing is lost or counted twice; a death during a save
// or a restore restores again from the last saved epoch (a save of the
// other parity never overwrites it). This is a coordinated checkpoint,
// where the 2017 report's GLB saves each worker on its own and records
// moved work with Set2: it needs no protocol for work in flight, and costs
// a stop of every worker per epoch. Place 0 (the caller's place) must live.
// Tests kill a place at the start of an epoch with fox.kill_at=PLACE:step:E
// (iterative.h).
// Event context, inside an activity.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "fox/apgas/apgas.h"
#include "fox/apgas/buddy_store.h"
#include "fox/apgas/global.h"
#include "fox/apgas/iterative.h"
#include "fox/clock.h"
#include "fox/spinlock.h"

namespace fox::apgas {

struct GlbParams {
  uint64_t n = 511;    // items a worker processes between yields (X10 GLB's default)
  uint32_t w = 1;      // random steal attempts before the lifelines
  uint32_t z = 0;      // lifeline dimensions (0: enough for every worker: ceil(log2 workers))
  uint32_t slots = 0;  // workers per place (0: the calling place's activity cores)
  // Resilient: the run goes in epochs of epoch_ms, each ended by stopping
  // every worker and saving its queue (see the top).
  bool resilient = false;
  uint64_t epoch_ms = 1000;
  bool trace = false;  // resilient: a line at the caller per epoch saved and per restore (with its time)
  template <class A>
  void serialize(A& ar) {
    ar(n, w, z, slots, resilient, epoch_ms, trace);
  }
};

// What happened, summed over the workers.
struct GlbStats {
  uint64_t chunks = 0;          // worker activities (chunks of n items)
  uint64_t steals = 0;          // random steals that took work
  uint64_t failed_steals = 0;   // random steals that found none
  uint64_t lifeline_deals = 0;  // work sent to a worker waiting on a lifeline
  uint64_t lifeline_asks = 0;   // lifelines asked
  // Resilient runs (at the caller): epochs, saves of every worker, places
  // lost and the restores after them, and the time they took.
  uint64_t epochs = 0, checkpoints = 0, failures = 0, restores = 0;
  double checkpoint_s = 0, restore_s = 0;
  template <class A>
  void serialize(A& ar) {
    ar(chunks, steals, failed_steals, lifeline_deals, lifeline_asks);
  }
  void Add(const GlbStats& o) {
    chunks += o.chunks, steals += o.steals, failed_steals += o.failed_steals;
    lifeline_deals += o.lifeline_deals, lifeline_asks += o.lifeline_asks;
  }
};

namespace detail {

// One worker: its queue, and whom it waits on or serves.
template <class Queue>
struct GlbWorker {
  explicit GlbWorker(Queue q) : queue(std::move(q)) {}
  SpinLock lock;
  Queue queue GUARDED_BY(lock);
  bool active GUARDED_BY(lock) = false;            // its activity runs (or is about to)
  std::vector<uint64_t> waiting GUARDED_BY(lock);  // workers waiting on a lifeline to this one
  std::set<uint64_t> asked GUARDED_BY(lock);       // lifelines asked since work last came
  GlbStats stats GUARDED_BY(lock);
  uint64_t rng = 0;  // its own activity's
};
// One place's part of a glb run.
template <class Queue>
struct GlbPlace {
  std::vector<uint32_t> home;                                     // each worker's place (changed by a restore)
  std::map<uint64_t, std::unique_ptr<GlbWorker<Queue>>> workers;  // this place's
  uint64_t deadline_ns = UINT64_MAX;                              // this epoch's end (clock::NowNs), set by Start
};

// The protocol's steps, each at one place (the closures they send name
// Queue: one per instantiation, serialization.h).
template <class Queue, class Bag>
struct Glb {
  using Handle = PlaceLocal<GlbPlace<Queue>>;

  // Worker u (at this place).
  static GlbWorker<Queue>* At(const Handle& h, uint64_t u) { return h()->workers.at(u).get(); }
  static Place PlaceOf(const GlbPlace<Queue>* place, uint64_t u) { return Place{place->home[u]}; }
  static bool Expired(const GlbPlace<Queue>* place) { return clock::NowNs() >= place->deadline_ns; }
  static bool AnyDead(const GlbPlace<Queue>* place) {
    return std::any_of(place->home.begin(), place->home.end(), [](uint32_t p) { return isDead(Place{p}); });
  }
  // Worker u's lifelines: workers one bit of z away.
  static std::vector<uint64_t> Lifelines(uint64_t u, uint64_t workers, uint32_t z) {
    std::vector<uint64_t> out;
    for (uint32_t k = 0; k < z && k < 63; ++k) {
      uint64_t other = u ^ (uint64_t(1) << k);
      if (other < workers) out.push_back(other);
    }
    return out;
  }
  // Worker u: chunks of work, lifelines served between them; out of work,
  // random steals, then the lifelines. An activity of glb's finish.
  static void Work(Handle h, uint64_t u, GlbParams p) {
    GlbPlace<Queue>* place = h();
    GlbWorker<Queue>* me = At(h, u);
    const uint64_t workers = place->home.size();
    for (;;) {
      if (Expired(place)) {  // the epoch is over: the queue waits for the next
        SpinGuard g(me->lock);
        me->active = false;
        return;
      }
      bool more;
      uint64_t chunk;
      std::vector<std::pair<uint64_t, Bag>> deals;
      {
        SpinGuard g(me->lock);
        chunk = ++me->stats.chunks;
        more = me->queue.process(p.n);
        while (more && !me->waiting.empty()) {
          std::optional<Bag> loot = me->queue.split();
          if (!loot) break;
          deals.emplace_back(me->waiting.back(), std::move(*loot));
          me->waiting.pop_back();
          ++me->stats.lifeline_deals;
        }
      }
      for (auto& [thief, bag] : deals) Send(h, place, thief, std::move(bag), p);
      if (more && chunk % 64 == 0 && AnyDead(place)) {  // its work is lost (or restored: this epoch is redone)
        throw DeadPlaceException(
            Place{*std::find_if(place->home.begin(), place->home.end(), [](uint32_t p) { return isDead(Place{p}); })});
      }
      if (more) {
        async([h, u, p] { Work(h, u, p); });  // yield: what is queued behind runs first
        return;
      }
      if (Steal(h, u, p)) continue;
      std::vector<uint64_t> ask;
      {
        SpinGuard g(me->lock);
        if (!me->queue.empty()) continue;  // work came meanwhile (a Deal while this one was active)
        me->active = false;
        for (uint64_t l : Lifelines(u, workers, p.z)) {
          if (me->asked.insert(l).second) ask.push_back(l);
        }
        me->stats.lifeline_asks += ask.size();
      }
      for (uint64_t buddy : ask) {
        Place there = PlaceOf(place, buddy);
        if (isDead(there)) continue;
        asyncAt(
            there, [](Handle h, uint64_t buddy, uint64_t thief, GlbParams p) { Lifeline(h, buddy, thief, p); }, h,
            buddy, u, p);
      }
      return;
    }
  }

  // Work for worker `thief`: merged there (a new activity, also here).
  static void Send(const Handle& h, const GlbPlace<Queue>* place, uint64_t thief, Bag bag, GlbParams p) {
    Place there = PlaceOf(place, thief);
    if (there == here()) {
      async([h, thief, bag = std::move(bag), p]() mutable { Deal(h, thief, std::move(bag), p); });
    } else {
      asyncAt(
          there, [](Handle h, uint64_t thief, Bag bag, GlbParams p) { Deal(h, thief, std::move(bag), p); }, h, thief,
          bag, p);
    }
  }

  // Up to w random victims among the other workers, each asked for half
  // its work; true if one gave (merged into worker u's queue).
  static bool Steal(Handle h, uint64_t u, GlbParams p) {
    GlbPlace<Queue>* place = h();
    GlbWorker<Queue>* me = At(h, u);
    const uint64_t workers = place->home.size();
    if (workers < 2) return false;
    for (uint32_t i = 0; i < p.w && !Expired(place); ++i) {
      me->rng ^= me->rng << 13, me->rng ^= me->rng >> 7, me->rng ^= me->rng << 17;
      uint64_t k = me->rng % (workers - 1);
      uint64_t victim = k >= u ? k + 1 : k;
      Place there = PlaceOf(place, victim);
      if (isDead(there)) continue;
      std::pair<bool, Bag> loot;
      try {
        loot = there == here() ? Take(h, victim)
                               : at(
                                     there, [](Handle h, uint64_t v) { return Take(h, v); }, h, victim);
      } catch (const DeadPlaceException&) {
        continue;
      }
      SpinGuard g(me->lock);
      if (!loot.first) {
        ++me->stats.failed_steals;
        continue;
      }
      ++me->stats.steals;
      me->queue.merge(std::move(loot.second));
      me->asked.clear();
      return true;
    }
    return false;
  }

  // At a victim's place: half of worker v's work, if it has enough.
  static std::pair<bool, Bag> Take(Handle h, uint64_t v) {
    GlbWorker<Queue>* victim = At(h, v);
    SpinGuard g(victim->lock);
    std::optional<Bag> loot = victim->queue.split();
    if (!loot) return {false, Bag{}};
    return {true, std::move(*loot)};
  }

  // Work for worker u from a lifeline; it starts if it was idle.
  static void Deal(Handle h, uint64_t u, Bag bag, GlbParams p) {
    GlbWorker<Queue>* me = At(h, u);
    {
      SpinGuard g(me->lock);
      me->queue.merge(std::move(bag));
      me->asked.clear();
      if (me->active) return;
      me->active = true;
    }
    Work(h, u, p);
  }

  // At worker `buddy`: half its work to `thief` now, or when it has some.
  static void Lifeline(Handle h, uint64_t buddy, uint64_t thief, GlbParams p) {
    GlbWorker<Queue>* me = At(h, buddy);
    std::optional<Bag> loot;
    {
      SpinGuard g(me->lock);
      loot = me->queue.split();
      if (loot) {
        ++me->stats.lifeline_deals;
      } else if (std::find(me->waiting.begin(), me->waiting.end(), thief) == me->waiting.end()) {
        me->waiting.push_back(thief);
      }
    }
    if (loot) Send(h, h(), thief, std::move(*loot), p);
  }

  // This place's workers start an epoch of `ms` (0: without end); those
  // without work go stealing at once.
  static void Start(Handle h, GlbParams p, uint64_t ms, uint64_t epoch) {
    MaybeDie(Phase::kStep, long(epoch));  // fox.kill_at=PLACE:step:EPOCH (iterative.h), for tests
    GlbPlace<Queue>* place = h();
    place->deadline_ns = ms == 0 ? UINT64_MAX : clock::NowNs() + ms * 1'000'000;
    for (auto& [u, me] : place->workers) {
      {
        SpinGuard g(me->lock);
        me->active = true;
        me->waiting.clear();  // asked in an epoch that is over: they ask again
        me->asked.clear();
      }
      async([h, u = u, p] { Work(h, u, p); });
    }
  }

  // This place's workers: made by make(u), or (a restore) read from
  // `store`'s copies of epoch `parity` made at saved_at[u].
  template <class Make>
  static void Build(Handle h, std::vector<uint32_t> home, const Make* make, const std::string& store,
                    const std::vector<uint32_t>& saved_at, uint64_t parity) {
    auto place = std::make_shared<GlbPlace<Queue>>();
    place->home = std::move(home);
    for (uint64_t u = 0; u < place->home.size(); ++u) {
      if (place->home[u] != here().id) continue;
      std::unique_ptr<GlbWorker<Queue>> worker;
      if (make != nullptr) {
        worker = std::make_unique<GlbWorker<Queue>>((*make)(u));
      } else {
        auto saved = BuddyStore::Make(store).GetRemote<Queue>(Place{saved_at[u]}, Key(u, parity));
        if (!saved) throw std::runtime_error("glb: worker " + std::to_string(u) + "'s saved queue is lost");
        worker = std::make_unique<GlbWorker<Queue>>(std::move(*saved));
      }
      worker->rng = 0x9E3779B97F4A7C15ull * (u + 1) | 1;
      place->workers.emplace(u, std::move(worker));
    }
    h.set(std::move(place));
  }
  static std::string Key(uint64_t u, uint64_t parity) { return "w" + std::to_string(u) + "/" + std::to_string(parity); }

  // Saves this place's workers' queues (one write: all or none).
  static void Save(Handle h, const std::string& store, uint64_t parity) {
    BuddyStore::Write write;
    for (auto& [u, me] : h()->workers) {
      SpinGuard g(me->lock);
      write.Put(Key(u, parity), me->queue);
    }
    BuddyStore::Make(store).Commit(std::move(write));
  }
  static uint64_t Busy(Handle h) {
    uint64_t busy = 0;
    for (auto& [u, me] : h()->workers) {
      SpinGuard g(me->lock);
      busy += me->queue.empty() ? 0 : 1;
    }
    return busy;
  }
};

// The places of `home` that are alive, in order, once each.
inline std::vector<Place> LivePlaces(const std::vector<uint32_t>& home) {
  std::vector<Place> out;
  for (uint32_t p : home) {
    if (!isDead(Place{p}) && std::find(out.begin(), out.end(), Place{p}) == out.end()) out.push_back(Place{p});
  }
  return out;
}
}  // namespace detail

// Runs the work of the queues make(u) builds for the workers u to its end
// (see the top); returns reduce over the workers' results in order, and
// their counters summed in `stats` if given.
template <class Queue, class R, class Make, class Reduce>
R glb(const std::vector<Place>& group, const Make& make, const Reduce& reduce, GlbParams params = {},
      GlbStats* stats = nullptr) {
  using Bag = typename std::invoke_result_t<decltype(&Queue::split), Queue&>::value_type;
  using G = detail::Glb<Queue, Bag>;
  using Handle = typename G::Handle;
  if (group.empty()) throw std::invalid_argument("glb: no places");
  if (params.slots == 0) params.slots = uint32_t(std::max(1, activityCores()));
  std::vector<uint32_t> home;  // worker u at group[u / slots]
  for (Place p : group) home.insert(home.end(), params.slots, p.id);
  if (params.z == 0) {
    while ((uint64_t(1) << params.z) < home.size()) ++params.z;
  }
  params.n = std::max<uint64_t>(1, params.n);
  GlbStats sum;
  Handle h = Handle::Fresh();
  const std::string store = "fox.glb/" + std::to_string(h.id());
  auto build = [&](const Make* maker, const std::vector<uint32_t>& saved_at, uint64_t parity) {
    finish([&] {
      for (Place p : detail::LivePlaces(home)) {
        if (maker != nullptr) {
          asyncAt(
              p,
              [](Handle h, std::vector<uint32_t> home, Make make) {
                G::Build(h, std::move(home), &make, std::string(), {}, 0);
              },
              h, home, *maker);
        } else {
          asyncAt(
              p,
              [](Handle h, std::vector<uint32_t> home, std::string store, std::vector<uint32_t> saved_at,
                 uint64_t parity) {
                G::Build(h, std::move(home), static_cast<const Make*>(nullptr), store, saved_at, parity);
              },
              h, home, store, saved_at, parity);
        }
      }
    });
  };
  auto run_epoch = [&](uint64_t ms, uint64_t epoch) {
    finish([&] {
      for (Place p : detail::LivePlaces(home)) {
        asyncAt(
            p, [](Handle h, GlbParams p, uint64_t ms, uint64_t epoch) { G::Start(h, p, ms, epoch); }, h, params, ms,
            epoch);
      }
    });
  };
  if (!params.resilient) {
    build(&make, {}, 0);
    run_epoch(0, 0);
  } else {
    // Epochs: saved (parity epoch % 2) before each, the last committed one
    // restored after a death; saved_at: where each worker's copy was made.
    std::vector<uint32_t> saved_at;
    uint64_t epoch = 0, committed = UINT64_MAX;
    bool restore = true;  // the first: made by make
    for (;;) {
      try {
        if (restore) {
          // A place died: its workers go to the live places, round robin,
          // and every worker restarts from the last committed epoch (from
          // make, if none was yet).
          uint64_t t0 = clock::NowNs();
          std::vector<Place> live = detail::LivePlaces(home);
          if (live.empty()) throw std::runtime_error("glb: every place died");
          size_t next = 0;
          std::set<uint32_t> lost;  // places, not workers: a place may have had several
          for (uint32_t& p : home) {
            if (isDead(Place{p})) lost.insert(p), p = live[next++ % live.size()].id;
          }
          sum.failures += lost.size();
          if (committed == UINT64_MAX) {
            build(&make, {}, 0);
          } else {
            build(nullptr, saved_at, committed % 2);
            epoch = committed;  // redone from there; its copies stand
          }
          restore = false;
          if (sum.failures > 0) {
            ++sum.restores;
            sum.restore_s += double(clock::NowNs() - t0) / 1e9;
            if (params.trace) {
              uint64_t unix_ns = detail::UnixNs();  // hosted only (benchmarks: the downtime)
              std::printf("glb: restored from epoch %llu after %llu places lost", (unsigned long long)epoch,
                          (unsigned long long)sum.failures);
              if (unix_ns != 0) std::printf(" at unix %.6f", double(unix_ns) / 1e9);
              std::printf("\n");
            }
          }
        }
        if (committed != epoch) {
          uint64_t t0 = clock::NowNs();
          for (Place p : detail::LivePlaces(home)) {
            at(
                p, [](Handle h, std::string store, uint64_t parity) { G::Save(h, store, parity); }, h, store,
                epoch % 2);
          }
          committed = epoch;
          saved_at = home;
          ++sum.checkpoints;
          sum.checkpoint_s += double(clock::NowNs() - t0) / 1e9;
          if (params.trace) std::printf("glb: epoch %llu saved\n", (unsigned long long)epoch);
        }
        ++sum.epochs;
        run_epoch(params.epoch_ms, epoch);
        uint64_t busy = 0;
        for (Place p : detail::LivePlaces(home))
          busy += at(
              p, [](Handle h) { return G::Busy(h); }, h);
        if (busy == 0) break;
        ++epoch;
      } catch (...) {
        if (!detail::OnlyDeaths(std::current_exception())) throw;  // not a death: not ours to mend
        restore = true;
      }
    }
  }
  std::vector<std::pair<uint64_t, R>> all;  // every worker's result, reduced in worker order
  for (Place p : detail::LivePlaces(home)) {
    auto [results, s] = at(
        p,
        [](Handle h) {
          std::vector<std::pair<uint64_t, R>> results;
          GlbStats s;
          for (auto& [u, worker] : h()->workers) {
            SpinGuard g(worker->lock);
            results.emplace_back(u, worker->queue.result());
            s.Add(worker->stats);
          }
          return std::make_pair(results, s);
        },
        h);
    all.insert(all.end(), results.begin(), results.end());
    sum.Add(s);
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::optional<R> total;
  for (auto& [u, r] : all) total = total ? reduce(*total, r) : r;
  h.Destroy(detail::LivePlaces(home));
  if (stats != nullptr) *stats = sum;
  return *total;
}

}  // namespace fox::apgas
