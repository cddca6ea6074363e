// Input data of the iterative apps in blocks dealt to places by index:
// rows [First(b), First(b + 1)) form block b, and the place at index i of
// a group of n holds the blocks b with b % n == i. The app's Config makes a
// block's data (generated, or read) from its rows alone:
//
//   struct Config {
//     using Block = ...;                                  // one block's data
//     uint64_t Rows() const; uint64_t Blocks() const;
//     Block Make(uint64_t first, uint64_t end) const;     // rows [first, end), the same at any place
//     Block MakeBlock(uint64_t b) const;                  // optional: block b, when its rows are not
//                                                         // known by index (a file's split, input.h)
//     template <class A> void serialize(A& ar);           // sent to the places
//   };
//
// Dense rows of doubles: Block = Dense, made by MakeDense.
//
// So any place makes any block alike: a place that takes blocks over
// after a failure generates them (the input is not checkpointed).
#pragma once

#include <algorithm>
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

// Block b of c's input.
template <class Config>
typename Config::Block MakeBlock(const Config& c, uint64_t b) {
  if constexpr (requires { c.MakeBlock(b); }) {
    return c.MakeBlock(b);
  } else {
    return c.Make(First(c, b), First(c, b + 1));
  }
}

// Rows of `width` doubles.
struct Dense {
  uint64_t width = 0;
  std::vector<double> data;
  uint64_t count() const { return width ? data.size() / width : 0; }
  const double* row(uint64_t i) const { return data.data() + i * width; }
};
// Rows [first, end) of `width`, row(i, out) writing row i.
template <class RowFn>
Dense MakeDense(uint64_t first, uint64_t end, uint64_t width, RowFn row) {
  Dense d{width, std::vector<double>((end - first) * width)};
  for (uint64_t i = first; i < end; ++i) row(i, &d.data[(i - first) * width]);
  return d;
}

// The blocks of one place.
template <class Config>
class Part {
 public:
  using Block = typename Config::Block;
  Part(const Config& c, size_t index, size_t n) {
    for (uint64_t b = index; b < c.Blocks(); b += n) {
      ids_.push_back(b);
      firsts_.push_back(First(c, b));
      blocks_.push_back(MakeBlock(c, b));
    }
  }
  // Whether this part is the one of index `index` of `n`.
  bool Holds(const Config& c, size_t index, size_t n) const {
    std::vector<uint64_t> want;
    for (uint64_t b = index; b < c.Blocks(); b += n) want.push_back(b);
    return want == ids_;
  }
  size_t size() const { return ids_.size(); }  // blocks
  const Block& block(size_t k) const { return blocks_[k]; }
  uint64_t first(size_t k) const { return firsts_[k]; }  // the global index of block k's first row

 private:
  std::vector<uint64_t> ids_, firsts_;
  std::vector<Block> blocks_;
};

// fn(k, &partial) for each of this place's blocks k, spread over its
// activity cores (one partial per core: blocks k = j mod cores on the j-th),
// then the partials added (P::operator+=). The models' partials add
// exactly, so the grouping does not show in the result.
template <class P, class Config, class Fn>
P MapBlocks(const Part<Config>& part, Fn fn) {
  size_t groups = std::min<size_t>(part.size(), size_t(std::max(1, apgas::activityCores())));
  std::vector<P> per_group(groups);
  apgas::finish([&] {
    for (size_t g = 0; g < groups; ++g) {
      apgas::async([&, g] {
        for (size_t k = g; k < part.size(); k += groups) fn(k, &per_group[g]);
      });
    }
  });
  if (groups == 1) return std::move(per_group[0]);
  P total{};
  for (P& p : per_group) total += p;
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
