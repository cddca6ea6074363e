// Team: collectives over a group of places (X10's Team): barrier,
// broadcast, allreduce and agree.
//
//   finish([&] { for (Place p : places()) asyncAt(p, [](std::vector<Place> g) {
//     Team team(g);                                   // every member, same group
//     double sum = team.allreduce(local_value(), Team::Sum<double>());
//   }, places()); });
//
// Every member constructs the Team with the same places in the same order
// and calls the same collectives in the same order, from one activity at a
// time. Each collective gathers every member's contribution at the lowest
// live member and hands the same set back to all (an allgather), from
// which each member computes its result locally.
//
// Failures: a member that dies makes barrier, broadcast and allreduce throw
// DeadPlaceException at every surviving member instead of hanging; agree
// returns, at every survivor, the bitwise AND of the values of the members
// that contributed (ULFM's agreement), so the survivors decide alike. If
// the gathering member itself dies, the others send their contributions to
// the next live member; if it dies while answering, having reached only
// some members, those hand its answer on to the next live member, which
// gives the others the same (every survivor sees the same set).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fox/apgas/apgas.h"

namespace fox::apgas {

class Team {
 public:
  explicit Team(std::vector<Place> places);
  const std::vector<Place>& places() const { return places_; }

  void barrier();

  template <class T>
  T broadcast(Place root, const T& value) {
    std::vector<uint8_t> mine;
    if (here() == root) {
      OutArchive out(mine);
      detail::Save(out, value);
    }
    auto all = Gather(std::move(mine));
    long i = IndexOf(root);
    if (i < 0) throw std::invalid_argument("Team::broadcast: the root is not a member");
    if (!all[size_t(i)]) throw DeadPlaceException(root);
    ThrowIfDead(all);
    InArchive in(all[size_t(i)]->data(), all[size_t(i)]->size());
    detail::Loaded<T> v(in);
    return std::move(v.get());
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

  // op(op(v0, v1), v2)... in member order, the same at every member.
  template <class T, class Op>
  T allreduce(const T& value, Op op) {
    return Reduce(value, op);
  }
  // Element-wise over arrays of equal length.
  template <class T, class Op>
  std::vector<T> allreduce(const std::vector<T>& values, Op op) {
    return Reduce(values, [op](const std::vector<T>& a, const std::vector<T>& b) {
      if (a.size() != b.size()) throw std::invalid_argument("Team::allreduce: arrays of different lengths");
      std::vector<T> r(a.size());
      for (size_t i = 0; i < a.size(); ++i) r[i] = op(a[i], b[i]);
      return r;
    });
  }

  // The AND of the survivors' values, the same at every survivor.
  int agree(int value);

 private:
  template <class T, class Op>
  T Reduce(const T& value, Op op) {
    std::vector<uint8_t> mine;
    OutArchive out(mine);
    detail::Save(out, value);
    auto all = Gather(std::move(mine));
    ThrowIfDead(all);
    std::optional<T> acc;
    for (auto& bytes : all) {
      InArchive in(bytes->data(), bytes->size());
      detail::Loaded<T> v(in);
      acc = acc ? op(*acc, v.get()) : v.get();
    }
    return *acc;
  }
  // Every member's contribution (nullopt: the member died first).
  std::vector<std::optional<std::vector<uint8_t>>> Gather(std::vector<uint8_t> mine);
  void ThrowIfDead(const std::vector<std::optional<std::vector<uint8_t>>>& all) const;
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
