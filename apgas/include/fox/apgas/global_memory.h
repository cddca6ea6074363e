// Memory addressed across places (Grappa's global addresses; issue 42):
// block-distributed arrays allocated over a group of places, and the global
// address of each element, which delegate operations (delegate.h) act on at
// the element's home place.
//
//   auto table = GlobalArray<uint64_t>::Make(1 << 20);     // over every live place
//   forall(table, [](uint64_t i, uint64_t& x) { x = i; });  // at the owners, on their cores
//   uint64_t v = delegate::read(table[12345]);              // from any place
//   table.Destroy();
//
// An array of n elements over the places g[0..P) keeps elements
// [k*B, min(n, (k+1)*B)) at g[k], where B = ceil(n / P) (its block): its
// elements are zero when Make returns. A GlobalArray is a small value (an id,
// the sizes and the group) that travels in closures and means the same array
// at every place; GlobalAddress<T> is a place, that id and an index into the
// place's block. Elements are trivially copyable values (words, structs of
// them); a place reads and writes its own block directly (local(), forall)
// and everyone else's through delegates. A place of the group that dies
// takes its block with it: delegates to it throw DeadPlaceException.
//
// Event context, inside an activity (Make, Destroy and forall block it).
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "fox/apgas/apgas.h"

namespace fox::apgas {

template <class T>
struct GlobalAddress {
  Place place;          // the element's home
  uint64_t region = 0;  // its array's id
  uint64_t index = 0;   // in the home's block
  friend bool operator==(const GlobalAddress& a, const GlobalAddress& b) {
    return a.place == b.place && a.region == b.region && a.index == b.index;
  }
  template <class Archive>
  void serialize(Archive& ar) {
    ar(place, region, index);
  }
};

// body(k, lo, hi) for the k-th of the parts of [0, count), one activity
// each (a copy of body) under the caller's finish: as many parts as this
// place has activity cores, fewer when a part would hold less than
// min_share (at least one part when count > 0). k < activityCores(), so
// a caller may keep per-part state in an array of that size.
template <class Body>
void overCores(uint64_t count, uint64_t min_share, const Body& body) {
  if (count == 0) return;
  uint64_t cores = uint64_t(std::max(1, activityCores()));
  uint64_t parts = std::max<uint64_t>(1, std::min(cores, count / std::max<uint64_t>(1, min_share)));
  for (uint64_t k = 0; k < parts; ++k) {
    uint64_t lo = count * k / parts, hi = count * (k + 1) / parts;
    async([=] { body(k, lo, hi); });
  }
}

namespace detail {
// This place's part of region `id`: `count` zeroed elements of `elem_bytes`.
// Registered for delegates until DropRegion. std::bad_alloc if it cannot be.
void AddRegion(uint64_t id, uint64_t count, uint32_t elem_bytes);
void DropRegion(uint64_t id);
// This place's elements of `id` (nullptr if it holds none).
void* RegionBase(uint64_t id);
uint64_t NewRegionId();
// Makes (count per place from n, block and the place's index in `group`)
// or drops the region at every place of `group`. Templates of their own, so
// that only programs that use them register their closures (global.h says
// why: DropPlaceLocalAt).
template <class = void>
void MakeRegionAt(const std::vector<Place>& group, uint64_t id, uint64_t n, uint64_t block, uint32_t elem_bytes) {
  finish([&] {
    for (size_t k = 0; k < group.size(); ++k) {
      asyncAt(
          group[k],
          [](uint64_t id, uint64_t n, uint64_t block, uint32_t elem_bytes, uint64_t k) {
            uint64_t begin = std::min(n, k * block), end = std::min(n, begin + block);
            AddRegion(id, end - begin, elem_bytes);
          },
          id, n, block, elem_bytes, uint64_t(k));
    }
  });
}
// body(lo, hi) over [0, count) in parts, one activity per activity core
// of this place (each a copy of body).
template <class Body>
void OverCores(uint64_t count, const Body& body) {
  overCores(count, 1, [body](uint64_t, uint64_t lo, uint64_t hi) { body(lo, hi); });
}
template <class = void>
void DropRegionAt(const std::vector<Place>& group, uint64_t id) {
  finish([&] {
    for (Place p : group) {
      if (!isDead(p))
        asyncAt(
            p, [](uint64_t id) { DropRegion(id); }, id);
    }
  });
}
}  // namespace detail

template <class T>
class GlobalArray {
  static_assert(std::is_trivially_copyable_v<T>, "GlobalArray: elements must be trivially copyable");

 public:
  GlobalArray() = default;
  // n elements over `group` (its order: the blocks' order), all zero.
  // MultipleExceptions (DeadPlaceException) if a place of it is dead;
  // std::invalid_argument for an empty group.
  static GlobalArray Make(uint64_t n, std::vector<Place> group) {
    if (group.empty()) throw std::invalid_argument("GlobalArray: no places");
    GlobalArray a;
    a.region_ = detail::NewRegionId();
    a.n_ = n;
    a.block_ = std::max<uint64_t>(1, (n + group.size() - 1) / group.size());
    a.group_ = std::move(group);
    detail::MakeRegionAt(a.group_, a.region_, a.n_, a.block_, uint32_t(sizeof(T)));
    return a;
  }
  // Over every live place.
  static GlobalArray Make(uint64_t n) {
    std::vector<Place> live;
    for (Place p : fox::apgas::places()) {
      if (!isDead(p)) live.push_back(p);
    }
    return Make(n, std::move(live));
  }

  uint64_t size() const { return n_; }
  uint64_t block() const { return block_; }
  const std::vector<Place>& group() const { return group_; }
  Place home(uint64_t i) const { return group_[Check(i) / block_]; }
  GlobalAddress<T> operator[](uint64_t i) const { return {home(i), region_, i % block_}; }

  // This place's block: the index of its first element, how many, and the
  // elements (nullptr when this place holds none).
  uint64_t localBegin() const { return std::min(n_, Position() * block_); }
  uint64_t localCount() const {
    uint64_t begin = localBegin();
    return std::min(n_, begin + block_) - begin;
  }
  T* local() const { return static_cast<T*>(detail::RegionBase(region_)); }

  // Frees every live place's block; delegates to it afterwards are refused.
  void Destroy() const { detail::DropRegionAt(group_, region_); }

  template <class Archive>
  void serialize(Archive& ar) {
    ar(region_, n_, block_, group_);
  }

 private:
  uint64_t Check(uint64_t i) const {
    if (i >= n_) {
      throw std::out_of_range("GlobalArray: index " + std::to_string(i) + " of " + std::to_string(n_));
    }
    return i;
  }
  // This place's index in the group (the group's size if it is not in it).
  uint64_t Position() const { return uint64_t(std::find(group_.begin(), group_.end(), here()) - group_.begin()); }

  uint64_t region_ = 0, n_ = 0, block_ = 1;
  std::vector<Place> group_;
};

// f(i, element, args...) for every element of `array`, at its home: each
// place splits its block over its activity cores (activities under a finish
// that returns when all ended, the delegates they issued included). f and
// args are copied to the places as for asyncAt.
template <class T, class F, class... A>
void forall(const GlobalArray<T>& array, const F& f, const A&... args) {
  finish([&] {
    for (Place p : array.group()) {
      asyncAt(
          p,
          [](GlobalArray<T> array, F f, A... args) {
            T* base = array.local();
            uint64_t begin = array.localBegin();
            detail::OverCores(array.localCount(), [=](uint64_t lo, uint64_t hi) {
              for (uint64_t j = lo; j < hi; ++j) f(begin + j, base[j], args...);
            });
          },
          array, f, args...);
    }
  });
}

// f(i, args...) for every i in [begin, end), split in blocks over `group`
// (every live place when empty) and at each place over its activity cores.
template <class F, class... A>
void forall(uint64_t begin, uint64_t end, std::vector<Place> group, const F& f, const A&... args) {
  if (group.empty()) {
    for (Place p : places()) {
      if (!isDead(p)) group.push_back(p);
    }
  }
  uint64_t n = end > begin ? end - begin : 0, places = group.size();
  finish([&] {
    for (uint64_t k = 0; k < places; ++k) {
      uint64_t lo = begin + n * k / places, hi = begin + n * (k + 1) / places;
      if (lo == hi) continue;
      asyncAt(
          group[k],
          [](uint64_t lo, uint64_t hi, F f, A... args) {
            detail::OverCores(hi - lo, [=](uint64_t a, uint64_t b) {
              for (uint64_t i = lo + a; i < lo + b; ++i) f(i, args...);
            });
          },
          lo, hi, f, args...);
    }
  });
}

}  // namespace fox::apgas
