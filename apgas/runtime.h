// Internal: the APGAS runtime of one place, a shared Ebb at kApgasRuntimeId
// (apgas.h is the API). It keeps the place's share of every finish, runs
// the activities that arrive, and serves `at`.
//
// Finish by counting (apgas.h "finish"). For a finish F, every place keeps
// Local{live, sent[q], recv[p]}: activities of F alive here, and the remote
// activities of F sent to each place and received from each since this
// place last reported. When an activity ends with live reaching 0, the place
// sends those counts to F's home as a Report and forgets F (it keeps no
// state for finishes it has nothing of). The home sums the reports per
// place and declares F terminated when its own activities of F are done and,
// for every pair of places, the activities one reported sending to the other
// equal those the other reported receiving (pairs with a dead place
// excepted). Why that is enough: an activity that still runs was started by
// a receive its place has not reported (it reports only when idle); follow
// the sends back and either some sender reported the send (a mismatch) or
// the chain reaches the home's own running activity. Two messages per remote
// activity in fan-out: the activity and its place's report.
//
// A place numbers everything it sends to one home (reports, flush answers)
// with one sequence; the home applies them in that order (holding any that
// overtook another: small and large messages take different paths).
//
// Messages (handler ids of kApgasRuntimeId; bodies written with OutArchive):
//   kSpawn    FinishKey, [chain,] closure   an activity (large if it must);
//             chain (vector<FinishKey>) in mode place0 only
//   kAt       Rpc request: FinishKey, [chain,] closure; reply u8 status (0
//             value, 1 exceptions), then the value or vector<ExceptionInfo>
//   kReport   u64 seq, FinishKey, Report  to F's state place
//   kJoin     Rpc request: u8 finish mode, vector<u64> closure ids (place 0
//             needs its own among them); reply u8 (1
//             welcome, 0 refused, 2 welcome into a running job: then
//             vector<u32> the places with it, vector<u32> the dead ones,
//             vector<u32> the Dht's members)
//   kReady    Rpc request (empty), a late place to place 0: its Dht joined;
//             place 0 adds it to the places, tells every place, then answers
//   kPlaces   Rpc request: vector<u32> the job's places (a place joined)
//   kShutdown Rpc request: empty; the job is over
//   kFlush    u32 dead place d            from a state place to every live place
//   kFlushed  u64 seq, u32 d, vector<Unreported>: for each finish whose
//             state is at the asker, the activities received from d not
//             reported yet
//   kDone     u64 finish id, vector<ExceptionInfo>: place 0 to F's home
//             (mode place0): F terminated
//   mode optimistic:
//   kFlushed  also vector<Row> (to place 0: the rows of finishes homed at d)
//   kAdoptions   u64 seq, u32 d, vector<pair<FinishKey A, FinishKey F>>:
//             place 0 to A's home once it rebuilt the finishes homed at d:
//             A waits for F (every place waits for this message per death)
//   kAdopteeDone u64 seq, FinishKey A, FinishKey F, vector<ExceptionInfo>
//   kRelease  u64 finish id: F's home to a place that reported to it: F
//             ended, forget its row
//
// Orphans of a dead place. When d dies, activities it sent may be on their
// way: delivered and acknowledged (in a receive mailbox) but not counted
// yet. A finish cannot tell those from none, so the home asks every live
// place to flush d: the place declares d dead (its later frames are
// dropped) and answers in its runtime's mailbox order, after every message
// from d that arrived before (the Messenger and the runtime share that core
// and its mailbox, large messages included), in its report sequence. So at
// the home the answer lands after exactly the reports sent before it: their
// sums plus the unreported counts are final, and the finish waits until each
// place's reports add up to them (happens-before invariance for orphans).
//
// Finish modes (a job's `fox.finish`, the same at every place: a join
// with another is refused):
//  - none: the state of F (the reports' sums) is at F's home, as above.
//    Activities of a finish whose home died are not adopted: its parent
//    finish may return before they end.
//  - place0: the state of every finish is at place 0, which outlives the
//    job. Reports, flushes and flush answers go to place 0 (the same
//    counting); when F terminates there, place 0 sends kDone (F's
//    exceptions) to F's home. Local-counter optimisation: a finish whose
//    activities never left its home terminates there, without a message.
//    Adoption: every activity carries its finish's ancestors (chain: parent
//    first, the root last), and every report and flush answer passes them
//    on, so place 0 knows the ancestors of every finish it holds state for.
//    When F's home dies, F is adopted by its nearest ancestor A whose home
//    lives: A terminates only after F (whose counts still settle at place 0,
//    its dead home's pairs excepted as for any dead place) and takes F's
//    exceptions. Why place 0 learns of every finish with live activities
//    before any finish may return: a live activity of F was started by a
//    receive not reported yet; follow the sends back: a send reported to
//    place 0 (F known), or an unreported receive from the dead home in some
//    place's flush answer (F known, with its chain), and every finish waits
//    for all flush answers.
//  - optimistic: the state of F is at its home (the master), as in none,
//    and distributed as its backup: every place that reports to the home
//    keeps its row (what it reported, in all) until the home, when F ends,
//    releases it (kRelease: with the report, 2 termination messages per
//    remote activity; finishes homed at place 0 need no rows). When the
//    home dies, place 0's flush asks every live place for its rows of the
//    finishes homed there (sequenced after its reports to place 0, and from
//    then on it reports them to place 0): place 0 rebuilds their states
//    exactly (rows of live places; the dead ones' pairs excepted, their
//    unreported receives final) and finds their adopters as in place0; an
//    adopter homed elsewhere learns it (kAdoptions, which every place
//    awaits per death before any of its finishes may end) and when its
//    adoptee ended (kAdopteeDone). Survives the death of any places but 0,
//    the finishes' homes included.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fox/apgas/apgas.h"
#include "fox/ebb/ebb_ref.h"
#include "fox/ebb/shared_ebb.h"
#include "fox/ebb/static_ids.h"
#include "fox/future.h"
#include "fox/net/ids.h"
#include "fox/spinlock.h"

namespace fox::apgas::detail {

enum Handler : uint16_t {
  kSpawn = 1,
  kAt,
  kReport,
  kJoin = 5,
  kShutdown,
  kFlush,
  kFlushed,
  kDone,
  kAdoptions,
  kAdopteeDone,
  kRelease,
  kReady,
  kPlaces
};

enum class FinishMode : uint8_t { kNone = 0, kPlace0 = 1, kOptimistic = 2 };
const char* FinishModeName(FinishMode mode);
// "none", "place0", "optimistic"; false for anything else.
bool ParseFinishMode(const char* text, FinishMode* mode);

struct FinishKey {
  uint32_t home = 0;
  uint64_t id = 0;
  friend bool operator==(const FinishKey& a, const FinishKey& b) { return a.home == b.home && a.id == b.id; }
  friend bool operator<(const FinishKey& a, const FinishKey& b) {
    return a.home != b.home ? a.home < b.home : a.id < b.id;
  }
  template <class Archive>
  void serialize(Archive& ar) {
    ar(home, id);
  }
};

// An exception on its way to a finish or an `at`.
struct ExceptionInfo {
  uint8_t dead = 0;  // 1: DeadPlaceException(place)
  uint32_t place = 0;
  std::string type, what;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(dead, place, type, what);
  }
};
std::vector<ExceptionInfo> Describe(std::exception_ptr e, Place where);
// Runs a closure packed by detail::Pack (its id, then it); for `at`, its
// value goes to `result`. Throws what the closure throws, or for an id this
// program lacks or bytes that do not hold what they claim.
void RunClosure(const std::vector<uint8_t>& closure, std::vector<uint8_t>* result);
// A message to the runtime at `place`, large if it must be. Event context.
Result<void> SendTo(uint32_t place, HandlerId handler, const std::vector<uint8_t>& bytes);
std::exception_ptr Rebuild(const ExceptionInfo& info);

using Chain = std::vector<FinishKey>;  // a finish's ancestors, parent first

struct Report {
  std::map<uint32_t, uint64_t> sent, recv;  // since the place's last report
  std::vector<ExceptionInfo> errors;
  Chain chain;  // mode place0
  template <class Archive>
  void serialize(Archive& ar) {
    ar(sent, recv, errors, chain);
  }
};

// Mode optimistic: what a place reported to the home of a finish (its row
// of the finish's state), kept until the home releases it; sent to place 0
// when the home dies, with the unreported receives from dead places.
struct Row {
  FinishKey finish;
  std::map<uint32_t, uint64_t> sent, recv;  // reported to the home, in all
  std::vector<ExceptionInfo> errors;        // reported to the home
  std::map<uint32_t, uint64_t> unreported;  // received from dead places, not reported
  Chain chain;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(finish, sent, recv, errors, unreported, chain);
  }
};

// In a flush answer: activities of `finish` received from the dead place
// and not reported yet.
struct Unreported {
  FinishKey finish;
  uint64_t count = 0;
  Chain chain;  // mode place0
  template <class Archive>
  void serialize(Archive& ar) {
    ar(finish, count, chain);
  }
};

// What event::Local points to in an activity.
struct Activity {
  FinishKey finish;
};
Activity* Current();

class Runtime : public ebb::SharedEbb<Runtime> {
 public:
  static ebb::EbbRef<Runtime> Get() { return ebb::EbbRef<Runtime>(ebb::kApgasRuntimeId); }

  Runtime();  // listens on the calling core; before am::Start
  ~Runtime();

  // ---- the job ----
  void SetPlaces(std::vector<Place> places);
  std::vector<Place> places() const;
  bool IsDead(uint32_t place) const;
  // Place 0: waits until every other place joined with `digest`; false
  // (after saying why) on a mismatch or after `timeout_ms`.
  bool AwaitJoins(uint64_t timeout_ms);
  // Other places: joins place 0; ok false if refused or place 0 is gone.
  // late: the job runs already (a place PlaceManager::addPlaces asked
  // for): the places, the dead ones and the Dht's members to join.
  struct Joined {
    bool ok = false, late = false;
    std::vector<uint32_t> places, dead, dht_members;
  };
  Joined Join();
  // A late place, its Dht joined: place 0 adds it to the job's places
  // (every place's places() has it when this returns true).
  bool Ready();
  // Place 0: asks the frontend for `n` more places (frontend::RequestNodes) and
  // waits until they are ready; returns them (fewer after timeout_ms).
  // std::runtime_error if the frontend cannot (not started by fox run).
  std::vector<Place> AddPlaces(size_t n, uint64_t timeout_ms);
  // Places known dead before this place started (a late one's Joined).
  void MarkDead(const std::vector<uint32_t>& dead);
  // Other places: blocks until place 0 ends the job (true) or dies (false).
  bool Serve();
  // Place 0: tells every live place the job is over.
  void Shutdown();

  // ---- finish ----
  // Before the transport starts; the same at every place (joins check).
  void SetMode(FinishMode mode) { mode_ = mode; }
  FinishMode mode() const { return mode_; }
  // At home; its body counts as one live activity. `parent`: the finish of
  // the activity that opens it (none for the root).
  FinishKey NewFinish(const FinishKey* parent);
  // What a message carrying an activity of f starts with (f, and in mode
  // place0 its chain); ReadHeader reads it back (throws if malformed).
  std::vector<uint8_t> Header(FinishKey f);
  FinishKey ReadHeader(InArchive& in, Chain* chain) const;
  void Spawned(FinishKey f);  // one more local activity of f
  // A remote one (false: `to` is dead, and then, if `record`, the finish
  // gets its DeadPlaceException; `at` throws it to its caller instead).
  bool Sent(FinishKey f, Place to, bool record = true);
  void Done(FinishKey f, std::exception_ptr error);
  void Wait(FinishKey f);  // at home: until f terminates; throws MultipleExceptions

  // Runs `body` as an activity of `f` on an application core; before Open,
  // it waits (held) until then.
  void Launch(FinishKey f, Function<void()> body);
  // This place is ready for activities: its store (the Dht) is up. Held
  // ones start, in order. Place 0 before the job's body, the others once
  // their Dht is started or joined: place 0 may send activities as soon as
  // a place has joined, and they may use the store at once.
  void Open();

  struct Stats {
    uint64_t finishes = 0;       // opened here
    uint64_t spawned_local = 0;  // activities spawned here to run here
    uint64_t done = 0;           // activities (finish bodies included) that ended here
    uint64_t spawned_remote = 0, received = 0, reports_sent = 0, reports_received = 0, malformed = 0;
    uint64_t local_finishes = 0;  // mode place0: ended at home, place 0 never told
    uint64_t adopted = 0;         // finishes adopted here after their home died
  };
  Stats stats() const;
  static void AddStatus(const void* context, std::string* out);

  // What must be settled at this place when a place dies, before this place
  // answers any finish's flush for it (so before a finish governing the
  // dead place's activities returns): the Dht's Quiesce, the resilient
  // store's transaction logs. Run once per dead place, in the order added;
  // flushes for it meanwhile wait. A hook may block; it must not throw.
  void AddDeathHook(Function<void(uint32_t dead)> hook);

 private:
  struct Local {
    int64_t live = 0;
    std::map<uint32_t, uint64_t> sent, recv;  // not reported yet
    std::vector<ExceptionInfo> errors;        // for the state place (not at home)
    Chain chain;                              // mode place0
  };
  struct Counts {
    std::map<uint32_t, uint64_t> sent, recv;
  };
  // What one place sent to this state place, applied in its sequence.
  struct Ordered {
    uint64_t applied = 0;
    std::map<uint64_t, std::pair<HandlerId, std::vector<uint8_t>>> held;
  };
  // A finish's state, at its state place (made by the first report).
  struct State {
    std::map<uint32_t, Counts> total;  // every place's reports, summed
    std::vector<ExceptionInfo> errors;
    std::set<uint32_t> dead_counted;
    // Per dead place d: how many activities each live place received from
    // d, final (kFlush answers).
    std::map<uint32_t, std::map<uint32_t, uint64_t>> from_dead;
    bool home_reported = false;  // the body ended (a state place other than home)
    Chain chain;
    std::optional<FinishKey> adopter;  // its home died: who waits for it (maybe at another place)
    std::set<FinishKey> adoptees;      // finishes it waits for
    bool finished = false;
  };
  // At home: what Wait waits for.
  struct Waiter {
    Promise<void> done;
    Future<void> future;                     // done's, taken by Wait
    std::vector<std::exception_ptr> errors;  // raised here kept as thrown
    bool escaped = false;                    // an activity left home (mode place0)
    bool resolved = false;
  };
  // Work for after the lock: finishes to fulfil, messages to send.
  struct Outgoing {
    uint32_t to;
    HandlerId handler;
    std::vector<uint8_t> bytes;
  };
  struct Resolve {
    std::vector<Promise<void>> promises;
    std::vector<Outgoing> messages;
    void Run();
  };

  void OnMessage(NodeId from, HandlerId handler, const uint8_t* data, size_t length);
  void OnSpawn(NodeId from, const uint8_t* data, size_t length);
  void OnAt(NodeId from, const uint8_t* data, size_t length);
  // A report or flush answer from `from` (its sequence number first).
  void OnOrdered(uint32_t from, HandlerId handler, const uint8_t* data, size_t length);
  void ApplyLocked(uint32_t from, HandlerId handler, const uint8_t* data, size_t length, Resolve* resolve)
      REQUIRES(lock_);
  void ApplyReportLocked(uint32_t from, FinishKey f, Report report, Resolve* resolve) REQUIRES(lock_);
  void ApplyFlushedLocked(uint32_t from, uint32_t dead, const std::vector<Unreported>& counts, Resolve* resolve)
      REQUIRES(lock_);
  std::vector<Unreported> UnreportedFromLocked(uint32_t asker, uint32_t dead) REQUIRES(lock_);
  // Mode optimistic, for place 0: the rows of finishes homed at `dead`
  // (forgotten here: their state is at place 0 from now on).
  std::vector<Row> RowsForLocked(uint32_t dead) REQUIRES(lock_);
  void ApplyRowLocked(uint32_t from, Row row) REQUIRES(lock_);
  // Place 0, mode optimistic, once every flush answer for `dead` is in:
  // the finishes homed there find their adopters.
  void AdoptionsLocked(uint32_t dead, Resolve* resolve) REQUIRES(lock_);
  void ApplyAdoptionsLocked(uint32_t dead, const std::vector<std::pair<FinishKey, FinishKey>>& pairs, Resolve* resolve)
      REQUIRES(lock_);
  void ApplyAdopteeDoneLocked(FinishKey adopter, FinishKey f, std::vector<ExceptionInfo> errors, Resolve* resolve)
      REQUIRES(lock_);
  // A message to `to` in this place's sequence to it (OnOrdered applies it).
  void OrderedLocked(uint32_t to, HandlerId handler, std::vector<uint8_t> body, Resolve* resolve) REQUIRES(lock_);
  void OnDone(NodeId from, const uint8_t* data, size_t length);
  // Where f's state is, seen from here: its home (none, optimistic), place
  // 0 (place0; optimistic once the home is gone).
  uint32_t StatePlaceLocked(FinishKey f) const REQUIRES(lock_) {
    if (mode_ == FinishMode::kPlace0) return 0;
    if (mode_ == FinishMode::kOptimistic && gone_.count(f.home) != 0) return 0;
    return f.home;
  }
  // The state of f here (made if missing, with `chain`, and adopted if its
  // home is dead); nullptr for a finish homed here that has ended (late).
  State* StateLocked(FinishKey f, const Chain* chain) REQUIRES(lock_);
  // f's home is dead (mode place0): its nearest ancestor with a live home
  // waits for it.
  // Place0: at once. Optimistic (place 0, `remote` given): an adopter whose
  // state is at its home is added to `remote` (sent as kAdoptions).
  using Adoptions = std::map<uint32_t, std::vector<std::pair<FinishKey, FinishKey>>>;
  void AdoptLocked(FinishKey f, State& s, Adoptions* remote) REQUIRES(lock_);
  void FlushesDoneLocked(Resolve* resolve) REQUIRES(lock_);
  void AddDeadLocked(FinishKey f, Local& l, uint32_t dead) REQUIRES(lock_);
  // f terminated: its waiter, its adopter or a kDone to its home.
  void FinishedLocked(FinishKey f, State& s, Resolve* resolve) REQUIRES(lock_);
  void SweepLocked() REQUIRES(lock_);
  // Adds exceptions to a finish's, a place's death once.
  static void AddErrors(State& s, std::vector<ExceptionInfo> errors);
  void OnJoin(NodeId from, const uint8_t* data, size_t length);
  void OnReady(NodeId from, const uint8_t* data, size_t length);
  void OnPlaces(NodeId from, const uint8_t* data, size_t length);
  void OnDeath(uint32_t place);
  void OnFlush(NodeId from, const uint8_t* data, size_t length);
  void CheckAllLocked(Resolve* resolve) REQUIRES(lock_);
  void Received(FinishKey f, uint32_t from, Chain chain);
  // At f's state place: whether f has terminated; if so, resolves it.
  void CheckLocked(FinishKey f, State& s, Resolve* resolve) REQUIRES(lock_);
  // At home: whether dead place `d` may have taken activities of f with it
  // (more sent to it than it reported received); if so, f gets (once) a
  // DeadPlaceException naming it.
  void NoteDeathLocked(FinishKey f, State& s, uint32_t d) REQUIRES(lock_);
  int NextCore();
  void Spawn(FinishKey f, Function<void()> body);
  struct Held {
    FinishKey f;
    Function<void()> body;
    Held* next;
  };
  Held* TakeHeld(bool open);
  std::atomic<bool> open_{false};
  Held* held_ GUARDED_BY(lock_) = nullptr;  // oldest first
  Held** held_tail_ GUARDED_BY(lock_) = &held_;
  static constexpr int kStealGroup = 1;  // event::SetStealGroup of the activity cores
  static void JoinStealGroup();

  int core_;
  uint64_t subscription_ = 0;
  mutable SpinLock lock_;
  std::vector<Place> places_ GUARDED_BY(lock_);
  std::set<uint32_t> dead_ GUARDED_BY(lock_);
  // Per dead place: the live places whose kFlushed answer is awaited.
  std::map<uint32_t, std::set<uint32_t>> flush_pending_ GUARDED_BY(lock_);
  std::map<uint32_t, uint64_t> sequence_ GUARDED_BY(lock_);  // last number sent to each home
  std::map<uint32_t, Ordered> ordered_ GUARDED_BY(lock_);    // from each place, as a home
  std::map<FinishKey, Local> local_ GUARDED_BY(lock_);
  std::map<FinishKey, State> state_ GUARDED_BY(lock_);
  // Mode optimistic: this place's rows of finishes homed elsewhere (not 0).
  std::map<FinishKey, Row> rows_ GUARDED_BY(lock_);
  // Places known dead here, by a death or a flush for it (routing: a
  // finish homed there reports to place 0).
  std::set<uint32_t> gone_ GUARDED_BY(lock_);
  // Mode optimistic: deaths whose kAdoptions from place 0 is awaited (not
  // at place 0), and (at place 0) those whose adoptions were sent.
  std::set<uint32_t> adoptions_pending_ GUARDED_BY(lock_);
  std::set<uint32_t> adoptions_early_ GUARDED_BY(lock_);  // kAdoptions before this place saw the death
  std::set<uint32_t> adoptions_done_ GUARDED_BY(lock_);
  std::map<uint64_t, Waiter> waiting_ GUARDED_BY(lock_);  // finishes homed here
  FinishMode mode_ = FinishMode::kNone;
  uint64_t next_finish_ GUARDED_BY(lock_) = 1;
  std::set<uint32_t> joined_ GUARDED_BY(lock_);
  std::string refusal_ GUARDED_BY(lock_);
  Stats stats_ GUARDED_BY(lock_);
  Promise<void> all_joined_;
  // Taken at once: a place may join (and set all_joined_, which gives up its
  // state) before place 0's main reaches AwaitJoins.
  Future<void> all_joined_future_ = all_joined_.GetFuture();
  std::atomic<bool> all_joined_set_{false};
  Promise<bool> over_;  // Serve's result
  std::atomic<bool> over_set_{false};
  std::atomic<uint32_t> next_core_{0};
  std::vector<std::shared_ptr<Function<void(uint32_t)>>> death_hooks_ GUARDED_BY(lock_);
  std::map<uint32_t, bool> hooks_done_ GUARDED_BY(lock_);  // per dead place: run (false: running)
  void RunDeathHooks(uint32_t dead);
};

}  // namespace fox::apgas::detail
