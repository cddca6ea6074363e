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
// reduce to the first member and a broadcast from it, but for arrays from
// 64 KiB (a reduce-scatter and an allgather: AllreduceArray); alltoall
// sends member to member. A member sends at most log2(n) + 1 messages per
// operation (AllreduceArray: 2 log2(n) + 1; alltoall: n - 1) and receives as many, so a member's cost
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

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
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

  // The members' values combined by op, at root (nullopt elsewhere). op(a,
  // b) may take a by value: the running value is moved into it.
  template <class T, class Op>
  std::optional<T> reduce(Place root, const T& value, Op op) {
    return ReduceValue<T>(RootIndex(root), value, op, next_op_++);
  }
  // Element-wise over arrays of equal length.
  template <class T, class Op>
  std::optional<std::vector<T>> reduce(Place root, const std::vector<T>& values, Op op) {
    auto elementwise = Elementwise<T>(op);
    return ReduceValue<std::vector<T>>(RootIndex(root), values, elementwise, next_op_++);
  }
  // The members' values combined by op, the same at every member.
  template <class T, class Op>
  T allreduce(const T& value, Op op) {
    return AllreduceValue<T>(value, op);
  }
  // Element-wise over arrays of equal length (from kLargeArrayBytes:
  // reduce-scatter and allgather, team_tree.cc's AllreduceArray).
  template <class T, class Op>
  std::vector<T> allreduce(const std::vector<T>& values, Op op) {
    if (values.size() * sizeof(T) >= kLargeArrayBytes && places_.size() > 1) {
      return AllreduceArray<T>(values, op, next_op_++);
    }
    auto elementwise = Elementwise<T>(op);
    return AllreduceValue<std::vector<T>>(values, elementwise);
  }
  static constexpr size_t kLargeArrayBytes = size_t(64) << 10;
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
    return detail::Packed(value);
  }
  template <class T>
  static T Decode(const Bytes& bytes) {
    return detail::Unpack<T>(bytes);
  }
  template <class T, class Op>
  static auto Elementwise(Op op) {
    return [op](std::vector<T> a, const std::vector<T>& b) {
      if (a.size() != b.size()) throw std::invalid_argument("Team: element-wise over arrays of different lengths");
      for (size_t i = 0; i < a.size(); ++i) a[i] = op(a[i], b[i]);
      return a;
    };
  }
  // The members' values combined up the tree to member `root` (its
  // result; nullopt elsewhere): each member decodes what its children send
  // and folds it into its running value, encoding only what it sends up.
  template <class T, class Op>
  std::optional<T> ReduceValue(size_t root, T value, Op& op, uint64_t operation) {
    bool at_root = ReduceInto(
        root, [&](Bytes theirs) { value = op(std::move(value), Decode<T>(theirs)); }, [&] { return Encode(value); },
        operation);
    if (!at_root) return std::nullopt;
    return value;
  }
  // Rabenseifner's allreduce of an array: among the largest power of two
  // p <= n of the members, a reduce-scatter by recursive halving (each
  // step, partners exchange halves of what they hold and combine the half
  // they keep) and an allgather by recursive doubling; the first 2(n - p)
  // members pair up before (the even one hands its array to the odd one)
  // and after (the odd one hands the result back). Each member sends and
  // receives about twice the array, whatever n, in log2(n) + 2 steps.
  // Partners are found lowest bit first and the lower member's value is
  // op's left: each element combines in member order, grouped as a tree.
  template <class T, class Op>
  std::vector<T> AllreduceArray(std::vector<T> v, Op& op, uint64_t operation) {
    size_t n = places_.size(), me = Rank(), p = 1;
    while (p * 2 <= n) p *= 2;
    size_t pairs = n - p;
    // Folds a received piece into v: it must be [lo, hi) (its partner's
    // half); theirs_first: the sender's members come before this one's.
    auto combine = [&](const Bytes& piece, size_t lo, size_t hi, bool theirs_first) {
      ReadPiece<T>(piece, [&](uint64_t at, const T* theirs, uint64_t count) {
        if (at != lo || count != hi - lo) throw std::logic_error("Team: an array piece out of step");
        for (uint64_t i = 0; i < count; ++i) {
          v[at + i] = theirs_first ? op(theirs[i], v[at + i]) : op(v[at + i], theirs[i]);
        }
      });
    };
    ThrowIfAnyDead();
    if (me < 2 * pairs && me % 2 == 0) {  // sits out: the odd partner reduces for both
      SendTo(me + 1, operation, 0, PieceOf(v, 0, v.size()));
      ReadPiece<T>(ReceiveFrom(me + 1, operation, 0), [&](uint64_t at, const T* all, uint64_t count) {
        if (at != 0 || count != v.size())
          throw std::invalid_argument("Team: element-wise over arrays of different lengths");
        std::copy(all, all + count, v.begin());
      });
      return v;
    }
    if (me < 2 * pairs) combine(ReceiveFrom(me - 1, operation, 0), 0, v.size(), true);
    size_t vr = me < 2 * pairs ? me / 2 : me - pairs;  // rank among the p
    auto member = [&](size_t r) { return r < pairs ? 2 * r + 1 : r + pairs; };
    size_t lo = 0, hi = v.size();
    uint32_t tag = 1;
    for (size_t mask = 1; mask < p; mask <<= 1, ++tag) {  // reduce-scatter
      size_t partner = member(vr ^ mask), mid = lo + (hi - lo) / 2;
      bool lower = (vr & mask) == 0;
      SendTo(partner, operation, tag, lower ? PieceOf(v, mid, hi) : PieceOf(v, lo, mid));
      if (lower) {
        hi = mid;
      } else {
        lo = mid;
      }
      combine(ReceiveFrom(partner, operation, tag), lo, hi, !lower);
    }
    for (size_t mask = p >> 1; mask > 0; mask >>= 1, ++tag) {  // allgather
      size_t partner = member(vr ^ mask);
      SendTo(partner, operation, tag, PieceOf(v, lo, hi));
      ReadPiece<T>(ReceiveFrom(partner, operation, tag), [&](uint64_t at, const T* theirs, uint64_t count) {
        if (at > v.size() || count > v.size() - at) throw std::logic_error("Team: an array piece out of step");
        std::copy(theirs, theirs + count, v.begin() + long(at));
        lo = std::min<size_t>(lo, at);
        hi = std::max<size_t>(hi, at + count);
      });
    }
    if (me < 2 * pairs) SendTo(me - 1, operation, 0, PieceOf(v, 0, v.size()));
    return v;
  }
  // AllreduceArray's messages: elements [lo, hi) of v and their offset; for
  // trivially copyable T the elements' bytes (one copy each way, room left
  // for the message's trailer), else cereal's.
  static constexpr size_t kPieceHeader = 16, kMessageRoom = 64;
  template <class T>
  static constexpr bool kRawPieces = std::is_trivially_copyable_v<T> && alignof(T) <= kPieceHeader;
  template <class T>
  static Bytes PieceOf(const std::vector<T>& v, size_t lo, size_t hi) {
    if constexpr (kRawPieces<T>) {
      Bytes b;
      b.reserve(kPieceHeader + (hi - lo) * sizeof(T) + kMessageRoom);
      b.resize(kPieceHeader + (hi - lo) * sizeof(T));
      uint64_t header[2] = {lo, hi - lo};
      std::memcpy(b.data(), header, kPieceHeader);
      if (hi > lo) std::memcpy(b.data() + kPieceHeader, v.data() + lo, (hi - lo) * sizeof(T));
      return b;
    } else {
      return Encode(
          std::pair<uint64_t, std::vector<T>>{lo, std::vector<T>(v.begin() + long(lo), v.begin() + long(hi))});
    }
  }
  // fn(offset, elements, count) on a piece (the elements in place for raw
  // pieces: a buffer from operator new is aligned for them).
  template <class T, class Fn>
  static void ReadPiece(const Bytes& b, Fn fn) {
    if constexpr (kRawPieces<T>) {
      uint64_t header[2];
      if (b.size() < kPieceHeader) throw std::logic_error("Team: an array piece without its header");
      std::memcpy(header, b.data(), kPieceHeader);
      if (header[1] > (b.size() - kPieceHeader) / sizeof(T) || b.size() != kPieceHeader + header[1] * sizeof(T)) {
        throw std::logic_error("Team: an array piece of the wrong length");
      }
      fn(header[0], reinterpret_cast<const T*>(b.data() + kPieceHeader), header[1]);
    } else {
      auto piece = Decode<std::pair<uint64_t, std::vector<T>>>(b);
      fn(piece.first, piece.second.data(), uint64_t(piece.second.size()));
    }
  }
  // ReduceValue to the first member and a broadcast from it.
  template <class T, class Op>
  T AllreduceValue(const T& value, Op& op) {
    uint64_t operation = next_op_++;  // one number: the two phases' messages have tags of their own
    if (auto r = ReduceValue<T>(0, value, op, operation)) {
      (void)BroadcastBytes(0, Encode(*r), operation);
      return std::move(*r);
    }
    return Decode<T>(BroadcastBytes(0, {}, operation));
  }
  static Bytes Nothing(const Bytes&, const Bytes&) { return {}; }
  // A reduce to the first member and a broadcast from it.
  Bytes AllreduceBytes(Bytes mine, Function<Bytes(const Bytes&, const Bytes&)> op) {
    uint64_t operation = next_op_++;  // one number: the two phases' messages have tags of their own
    auto r = ReduceBytes(0, std::move(mine), std::move(op), operation);
    return BroadcastBytes(0, r ? std::move(*r) : Bytes{}, operation);
  }

  // The tree algorithms (team_tree.cc), over member indices; `operation`
  // numbers the messages. ReduceInto: up the binomial tree to root, each
  // member calls absorb(bytes) with each child's subtree value in member
  // order, then sends take() (its value so far) to its parent; true at root.
  bool ReduceInto(size_t root, Function<void(Bytes)> absorb, Function<Bytes()> take, uint64_t operation);
  // One step's message to or from a member (index), and the check that
  // no member is dead yet (DeadPlaceException), for AllreduceArray.
  void SendTo(size_t member, uint64_t operation, uint32_t tag, Bytes bytes);
  Bytes ReceiveFrom(size_t member, uint64_t operation, uint32_t tag);
  void ThrowIfAnyDead() const;
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
