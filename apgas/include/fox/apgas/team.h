// Team: collectives over a group of places (X10's Team): barrier,
// broadcast, reduce, allreduce, gather, scatter, alltoall, split and agree.
//
//   finish([&] { for (Place p : places()) asyncAt(p, [](std::vector<Place> g) {
//     Team team(g);                                   // every member, same group
//     double sum = team.allreduce(local_value(), Team::Sum<double>());
//   }, places()); });
//
// Every member constructs the Team with the same places in the same order
// and calls the same collectives in the same order, from one activity at a
// time.
//
// Algorithms (team_tree.cc): reduce and gather up a binomial tree rooted
// at the root, broadcast and scatter down one; allreduce and barrier are a
// reduce to the first member and a broadcast from it; alltoall sends
// member to member. A member sends at most log2(n) + 1 messages per
// operation (alltoall: n - 1) and receives as many, so a member's cost
// grows with log n, not n. Reductions combine in member order (grouped
// as the tree is), the same at every member.
//
// Failures: once a member is dead (known at the start, or learnt while
// waiting), every collective but agree throws DeadPlaceException at every
// survivor that has not had its result yet (none waits for ever); the team
// is then spent (make a new one over the survivors). A member that had its
// result before the death keeps it, and a result means every member
// contributed. agree (team.cc) gathers at the lowest live member and
// returns, at every survivor, the bitwise AND of the values of the members
// that contributed (ULFM's agreement), so the survivors decide alike: if
// the gathering member dies, the others send their contributions to the
// next live member; if it dies while answering, having reached only some
// members, those hand its answer on to the next live member, which gives
// the others the same.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fox/apgas/apgas.h"
#include "fox/function.h"

namespace fox::apgas {

class Team {
 public:
  explicit Team(std::vector<Place> places);
  const std::vector<Place>& places() const { return places_; }
  // This place's index in the team.
  size_t rank() const { return Rank(); }

  void barrier() { (void)AllreduceBytes({}, Nothing); }

  // root's value, at every member.
  template <class T>
  T broadcast(Place root, const T& value) {
    size_t r = RootIndex(root);
    return Decode<T>(BroadcastBytes(r, here() == root ? Encode(value) : std::vector<uint8_t>{}, next_op_++));
  }

  template <class T>
  struct Sum {
    T operator()(const T& a, const T& b) const { return a + b; }
  };
  template <class T>
  struct Max {
    T operator()(const T& a, const T& b) const { return a < b ? b : a; }
  };
  template <class T>
  struct Min {
    T operator()(const T& a, const T& b) const { return b < a ? b : a; }
  };

  // The members' values combined by op, at root (nullopt elsewhere).
  template <class T, class Op>
  std::optional<T> reduce(Place root, const T& value, Op op) {
    auto r = ReduceBytes(RootIndex(root), Encode(value), Combiner<T>(op), next_op_++);
    if (!r) return std::nullopt;
    return Decode<T>(*r);
  }
  // Element-wise over arrays of equal length.
  template <class T, class Op>
  std::optional<std::vector<T>> reduce(Place root, const std::vector<T>& values, Op op) {
    using V = std::vector<T>;
    auto r = ReduceBytes(RootIndex(root), Encode(values), Combiner<V>(Elementwise<T>(op)), next_op_++);
    if (!r) return std::nullopt;
    return Decode<V>(*r);
  }
  // The members' values combined by op, the same at every member.
  template <class T, class Op>
  T allreduce(const T& value, Op op) {
    return Decode<T>(AllreduceBytes(Encode(value), Combiner<T>(op)));
  }
  // Element-wise over arrays of equal length.
  template <class T, class Op>
  std::vector<T> allreduce(const std::vector<T>& values, Op op) {
    using V = std::vector<T>;
    return Decode<V>(AllreduceBytes(Encode(values), Combiner<V>(Elementwise<T>(op))));
  }
  // Every member's value, in member order, at root (empty elsewhere).
  template <class T>
  std::vector<T> gather(Place root, const T& value) {
    auto all = GatherBytes(RootIndex(root), Encode(value), next_op_++);
    std::vector<T> out;
    for (auto& bytes : all) out.push_back(Decode<T>(bytes));
    return out;
  }
  // values[i] (given at root: one per member) to member i.
  template <class T>
  T scatter(Place root, const std::vector<T>& values) {
    std::vector<std::vector<uint8_t>> pieces;
    if (here() == root) {
      for (const T& v : values) pieces.push_back(Encode(v));
    }
    return Decode<T>(ScatterBytes(RootIndex(root), std::move(pieces), next_op_++));
  }
  // values[i] to member i; returns what each member sent this one.
  template <class T>
  std::vector<T> alltoall(const std::vector<T>& values) {
    std::vector<std::vector<uint8_t>> pieces;
    for (const T& v : values) pieces.push_back(Encode(v));
    auto got = AlltoallBytes(std::move(pieces), next_op_++);
    std::vector<T> out;
    for (auto& bytes : got) out.push_back(Decode<T>(bytes));
    return out;
  }
  // The team of the members that gave the same color, ordered by key (then
  // by index here); a collective of this team (every member calls it).
  Team split(int64_t color, int64_t key);

  // The AND of the survivors' values, the same at every survivor.
  int agree(int value);

 private:
  using Bytes = std::vector<uint8_t>;
  template <class T>
  static Bytes Encode(const T& value) {
    Bytes bytes;
    OutArchive out(bytes);
    detail::Save(out, value);
    return bytes;
  }
  template <class T>
  static T Decode(const Bytes& bytes) {
    return detail::Unpack<T>(bytes);
  }
  template <class T, class Op>
  static Function<Bytes(const Bytes&, const Bytes&)> Combiner(Op op) {
    return [op](const Bytes& a, const Bytes& b) { return Encode<T>(op(Decode<T>(a), Decode<T>(b))); };
  }
  template <class T, class Op>
  static auto Elementwise(Op op) {
    return [op](const std::vector<T>& a, const std::vector<T>& b) {
      if (a.size() != b.size()) throw std::invalid_argument("Team: element-wise over arrays of different lengths");
      std::vector<T> r(a.size());
      for (size_t i = 0; i < a.size(); ++i) r[i] = op(a[i], b[i]);
      return r;
    };
  }
  static Bytes Nothing(const Bytes&, const Bytes&) { return {}; }
  // A reduce to the first member and a broadcast from it.
  Bytes AllreduceBytes(Bytes mine, Function<Bytes(const Bytes&, const Bytes&)> op) {
    uint64_t operation = next_op_++;  // one number: the two phases' messages have tags of their own
    auto r = ReduceBytes(0, std::move(mine), std::move(op), operation);
    return BroadcastBytes(0, r ? std::move(*r) : Bytes{}, operation);
  }

  // The tree algorithms (team_tree.cc), over member indices; `operation`
  // numbers the messages.
  std::optional<Bytes> ReduceBytes(size_t root, Bytes mine, Function<Bytes(const Bytes&, const Bytes&)> op,
                                   uint64_t operation);
  Bytes BroadcastBytes(size_t root, Bytes bytes, uint64_t operation);
  std::vector<Bytes> GatherBytes(size_t root, Bytes mine, uint64_t operation);
  Bytes ScatterBytes(size_t root, std::vector<Bytes> pieces, uint64_t operation);
  std::vector<Bytes> AlltoallBytes(std::vector<Bytes> pieces, uint64_t operation);
  std::vector<uint32_t> Ids() const;
  size_t Rank() const;
  size_t RootIndex(Place root) const;

  // agree's gathering (team.cc): every member's contribution (nullopt: the
  // member died first).
  std::vector<std::optional<std::vector<uint8_t>>> Gather(std::vector<uint8_t> mine);
  long IndexOf(Place p) const;

  std::vector<Place> places_;
  uint64_t id_;
  uint64_t next_op_ = 0;
};

namespace testing {
// Fault injection for tests, at this place as a Team gatherer: `filter` is
// asked before the answer to operation `op` (0, 1, ... of a team) goes to
// `member`; false stops that delivery and the rest, as if this place died
// while answering. Set it before the operation; nullptr removes it.
void SetTeamDeliverFilter(std::function<bool(uint64_t op, uint32_t member)> filter);
}  // namespace testing

}  // namespace fox::apgas
