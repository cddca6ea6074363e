// The APGAS programming model of Resilient X10 in C++ (DESIGN.md "APGAS
// model"): places, activities, finish, async, asyncAt and at.
//
//   int main(int argc, char** argv) {
//     return fox::apgas::Main(argc, argv, [] {          // place 0 runs this
//       fox::apgas::finish([] {
//         for (Place p : fox::apgas::places())
//           fox::apgas::asyncAt(p, [](int n) { std::printf("%d\n", n); }, 42);
//       });
//       int v = fox::apgas::at(Place{1}, [] { return 7; });
//     });
//   }
//
// Places. One place per node of the job, with the node's id (place 0: the
// frontend's Linux process, or node 0). Every place runs the same program;
// Main runs the body at place 0 only, the other places serve activities
// until place 0 says the job is over. Place ids are never reused.
//
// Activities. An activity is an event on one of the place's application
// cores (kernel cores keep the NIC and timers); it may block (at, finish,
// futures) without holding its core. Every activity belongs to the finish
// that governs it: the innermost finish of the activity that spawned it.
//
// finish(body) runs body in the calling activity, then waits until every
// activity spawned under it, at any place and transitively, has ended. An
// exception an activity throws reaches its finish, which throws them all as
// MultipleExceptions; one from another place arrives as RemoteException
// (its type name and message) or DeadPlaceException. Termination is
// detected by counting: each place reports to the finish's home place, when
// it has no more live activities of that finish, how many it sent to and
// received from each place (two messages per remote activity in fan-out).
//
// Failures. A place that dies makes every finish it took part in throw a
// DeadPlaceException naming it; `at` to a dead place throws one at once.
// This finish (mode `none`) does not track activities in flight from a
// place that dies while sending them (the resilient `place0` and
// `optimistic` modes, which do, are to come).
//
// Sending: closures and their arguments are deep-copied to the other place
// (fox/apgas/serialization.h says what can be sent; the rest does not
// compile). Everything here is event context, inside an activity (Main's
// body is one).
#pragma once

#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "fox/apgas/serialization.h"
#include "fox/function.h"

namespace fox::apgas {

struct Place {
  uint32_t id = 0;
  friend bool operator==(Place a, Place b) { return a.id == b.id; }
  friend bool operator!=(Place a, Place b) { return a.id != b.id; }
  friend bool operator<(Place a, Place b) { return a.id < b.id; }
  template <class Archive>
  void serialize(Archive& ar) {
    ar(id);
  }
};

// ---- exceptions ----

class DeadPlaceException : public std::runtime_error {
 public:
  explicit DeadPlaceException(Place place);
  Place place() const { return place_; }

 private:
  Place place_;
};

// An exception thrown by an activity at another place: its type's name and
// message (the object itself stays there).
class RemoteException : public std::runtime_error {
 public:
  RemoteException(Place place, std::string type, const std::string& what);
  Place place() const { return place_; }
  const std::string& type() const { return type_; }

 private:
  Place place_;
  std::string type_;
};

// Every exception the activities of a finish threw (never nested: a
// MultipleExceptions reaching a finish is flattened into its own).
class MultipleExceptions : public std::exception {
 public:
  explicit MultipleExceptions(std::vector<std::exception_ptr> exceptions);
  const char* what() const noexcept override { return what_.c_str(); }
  const std::vector<std::exception_ptr>& exceptions() const { return exceptions_; }
  // How many are DeadPlaceExceptions naming `place` (or any place: no argument).
  size_t DeadPlaces() const;
  bool HasDeadPlace(Place place) const;

 private:
  std::vector<std::exception_ptr> exceptions_;
  std::string what_;
};

// ---- places ----

Place here();
// The places of the job in id order, dead ones included (isDead tells).
std::vector<Place> places();
bool isDead(Place place);
// How many cores of this place run its activities: natively its application
// cores (core 0 alone on a node of kernel cores only); hosted, every core but
// core 0, the transport's, when there are others.
int activityCores();

// An ordered set of places (X10's PlaceGroup).
class PlaceGroup {
 public:
  PlaceGroup() = default;
  explicit PlaceGroup(std::vector<Place> places) : places_(std::move(places)) {}
  size_t size() const { return places_.size(); }
  Place operator[](size_t i) const { return places_[i]; }
  // The index of `p`, or -1.
  long indexOf(Place p) const;
  bool contains(Place p) const { return indexOf(p) >= 0; }
  auto begin() const { return places_.begin(); }
  auto end() const { return places_.end(); }

 private:
  std::vector<Place> places_;
};

// ---- activities ----

namespace detail {
// The runtime's entry points (runtime.cc).
void FinishBlock(Function<void()> body);
void SpawnLocal(Function<void()> body);
void SpawnRemote(Place place, std::vector<uint8_t> closure);
std::vector<uint8_t> AtRemote(Place place, std::vector<uint8_t> closure);  // the result's bytes
}  // namespace detail

// Runs body, then waits for every activity it spawned (see the top).
template <class F>
void finish(F&& body) {
  detail::FinishBlock(Function<void()>(std::forward<F>(body)));
}

// A new activity at this place, under the current finish (not copied:
// the same address space).
template <class F>
void async(F&& body) {
  detail::SpawnLocal(Function<void()>(std::forward<F>(body)));
}

// A new activity at `place` running f(args...), under the current finish;
// f and args are copied there. A dead place: the finish gets a
// DeadPlaceException.
template <class F, class... A>
void asyncAt(Place place, const F& f, const A&... args) {
  static_assert(std::is_void_v<std::invoke_result_t<const F&, const A&...>>,
                "apgas::asyncAt: the closure returns a value nobody receives (use at)");
  detail::SpawnRemote(place, detail::Pack(f, args...));
}

// f(args...) evaluated at `place` (copied there), its value copied back;
// its exception rethrown here (RemoteException); the activities it spawns
// belong to the current finish. DeadPlaceException if the place is dead or
// dies first. At this place: called directly.
template <class F, class... A>
auto at(Place place, const F& f, const A&... args) -> std::invoke_result_t<const F&, const A&...> {
  using R = std::invoke_result_t<const F&, const A&...>;
  if (place == here()) return f(args...);
  std::vector<uint8_t> result = detail::AtRemote(place, detail::Pack(f, args...));
  if constexpr (!std::is_void_v<R>) return detail::Unpack<R>(result);
}

// Starts the place (transport, runtime; every place of the job must join,
// with the same closures, else the job is refused), runs `body` at place 0
// inside a root finish, then ends the job at every place. Returns the exit
// status for main: 0, 1 if body threw (printed) or a place failed to join,
// 2 for bad boot arguments.
int Main(int argc, char** argv, Function<void()> body);

}  // namespace fox::apgas
