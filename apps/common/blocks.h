// Input data of the iterative apps in blocks dealt to places by index:
// rows [First(b), First(b + 1)) form block b, and the place at index i of
// a group of n holds the blocks b with b % n == i. A row is `width`
// doubles, generated (or read) row by row by the app's Config:
//
//   struct Config {
//     uint64_t Rows() const; uint64_t Blocks() const; uint64_t Width() const;
//     void Row(uint64_t i, double* out) const;   // row i, the same at any place
//     template <class A> void serialize(A& ar);  // sent to the places
//   };
//
// So any place makes any block alike: a place that takes blocks over
// after a failure generates them (the input is not checkpointed).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "fox/apgas/apgas.h"
#include "fox/apgas/global.h"

namespace fox::apps {

template <class Config>
inline uint64_t First(const Config& c, uint64_t b) {
  return c.Rows() * b / c.Blocks();
}

// The blocks of one place.
template <class Config>
class Part {
 public:
  Part(const Config& c, size_t index, size_t n) : width_(c.Width()) {
    for (uint64_t b = index; b < c.Blocks(); b += n) {
      ids_.push_back(b);
      firsts_.push_back(First(c, b));
      std::vector<double> data((First(c, b + 1) - First(c, b)) * width_);
      for (uint64_t i = First(c, b); i < First(c, b + 1); ++i) c.Row(i, &data[(i - First(c, b)) * width_]);
      data_.push_back(std::move(data));
    }
  }
  // Whether this part is the one of index `index` of `n`.
  bool Holds(const Config& c, size_t index, size_t n) const {
    std::vector<uint64_t> want;
    for (uint64_t b = index; b < c.Blocks(); b += n) want.push_back(b);
    return want == ids_;
  }
  size_t size() const { return ids_.size(); }  // blocks
  const double* rows(size_t k) const { return data_[k].data(); }
  uint64_t count(size_t k) const { return data_[k].size() / width_; }
  uint64_t first(size_t k) const { return firsts_[k]; }  // global index of the block's first row
  uint64_t width() const { return width_; }

 private:
  uint64_t width_;
  std::vector<uint64_t> ids_, firsts_;
  std::vector<std::vector<double>> data_;
};

// fn(k, &partial) for each of this place's blocks k, spread over its
// activity cores, then the partials added (P::operator+=) in block order.
template <class P, class Config, class Fn>
P MapBlocks(const Part<Config>& part, Fn fn) {
  std::vector<P> per_block(part.size());
  apgas::finish([&] {
    for (size_t k = 0; k < part.size(); ++k) apgas::async([&, k] { fn(k, &per_block[k]); });
  });
  P total{};
  for (P& p : per_block) total += p;
  return total;
}

// Makes the part of index i at the i-th place of `group`, or keeps the one
// it holds if it is that already.
template <class Config>
void PlaceParts(apgas::PlaceLocal<Part<Config>> parts, const apgas::PlaceGroup& group, const Config& c) {
  std::vector<apgas::Place> members(group.begin(), group.end());
  apgas::finish([&] {
    for (size_t i = 0; i < members.size(); ++i) {
      apgas::asyncAt(
          members[i],
          [](apgas::PlaceLocal<Part<Config>> parts, const Config& c, uint64_t index, uint64_t n) {
            auto* part = parts.find();
            if (part == nullptr || !part->Holds(c, index, n)) parts.set(std::make_shared<Part<Config>>(c, index, n));
          },
          parts, c, uint64_t(i), uint64_t(members.size()));
    }
  });
}

}  // namespace fox::apps
