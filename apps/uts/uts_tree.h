// The Unbalanced Tree Search benchmark's geometric trees (UTS: Olivier et
// al., LCPC 2006; its -t 1 trees with the fixed shape, -a 3: T1, T1L, T1XL),
// defined as the benchmark defines them, so that counts match its tables.
//
// A node is the 20-byte SHA-1 digest of its description: the root's is
// SHA-1 of 16 zero bytes and the seed (4 bytes, big-endian); child i's is
// SHA-1 of its parent's digest and i (4 bytes, big-endian). A node at depth
// d < depth has a geometrically distributed number of children with mean
// b: with p = 1 / (1 + b) and u = r / 2^31, where r is the digest's last 4
// bytes (big-endian) less the top bit, floor(log(1 - u) / log(1 - p)),
// at most 100 (UTS's cap); a node at depth `depth` has none.
//
// The work of a search is a stack of intervals: a node's digest and depth
// with the range of its children not explored yet; a search takes the next
// child of the top interval, counts it and pushes the range of its children
// (UTS's and X10's GLB UTS's representation: half of every interval's range
// is work to give away).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "sha1.h"

namespace fox::apps::uts {

struct Tree {
  uint32_t depth = 13;  // -d (T1L)
  double b = 4;         // -b
  uint32_t seed = 29;   // -r
};

inline Digest Root(uint32_t seed) {
  uint8_t bytes[20] = {};
  for (int i = 0; i < 4; ++i) bytes[16 + i] = uint8_t(seed >> (24 - 8 * i));
  return Sha1Of(bytes, sizeof bytes);
}

inline Digest Child(const uint8_t* parent, uint32_t i) {
  Sha1 s;
  s.Update(parent, 20);
  uint8_t number[4];
  for (int k = 0; k < 4; ++k) number[k] = uint8_t(i >> (24 - 8 * k));
  s.Update(number, 4);
  return s.Final();
}

inline uint32_t Children(const uint8_t* digest, uint32_t depth, const Tree& tree) {
  if (depth >= tree.depth) return 0;
  uint32_t r =
      (uint32_t(digest[16]) << 24 | uint32_t(digest[17]) << 16 | uint32_t(digest[18]) << 8 | digest[19]) & 0x7FFFFFFF;
  double p = 1.0 / (1.0 + tree.b), u = double(r) / 2147483648.0;
  double n = std::floor(std::log(1.0 - u) / std::log(1.0 - p));
  return n > 100 ? 100 : uint32_t(n);
}

// Children [lower, upper) of the node `digest` at `depth`, not explored yet.
struct Interval {
  uint8_t digest[20];
  uint32_t depth, lower, upper;
  template <class A>
  void serialize(A& ar) {
    ar(digest, depth, lower, upper);
  }
};

// Work given away: intervals.
struct Bag {
  std::vector<Interval> intervals;
  template <class A>
  void serialize(A& ar) {
    ar(intervals);
  }
};

// A search's stack and count: glb.h's Queue.
class Search {
 public:
  Search() = default;
  explicit Search(const Tree& tree) : tree_(tree) {}
  // The root: counted, its children's range pushed.
  void SeedRoot() {
    Digest root = Root(tree_.seed);
    ++count_;
    Push(root.data(), 0);
  }
  bool process(uint64_t n) {
    for (; n > 0 && !stack_.empty(); --n) {
      Interval& top = stack_.back();
      Digest child = Child(top.digest, top.lower++);
      uint32_t depth = top.depth + 1;
      if (top.lower == top.upper) stack_.pop_back();
      ++count_;
      Push(child.data(), depth);
    }
    return !stack_.empty();
  }
  // The upper half of every interval with two children or more to explore.
  std::optional<Bag> split() {
    Bag bag;
    for (Interval& i : stack_) {
      uint32_t left = i.upper - i.lower;
      if (left < 2) continue;
      Interval give = i;
      give.lower = i.lower + left / 2;
      i.upper = give.lower;
      bag.intervals.push_back(give);
    }
    if (bag.intervals.empty()) return std::nullopt;
    return bag;
  }
  void merge(Bag bag) { stack_.insert(stack_.end(), bag.intervals.begin(), bag.intervals.end()); }
  bool empty() const { return stack_.empty(); }
  uint64_t result() const { return count_; }
  template <class A>
  void serialize(A& ar) {
    ar(tree_.depth, tree_.b, tree_.seed, count_, stack_);
  }

 private:
  void Push(const uint8_t* digest, uint32_t depth) {
    uint32_t n = Children(digest, depth, tree_);
    if (n == 0) return;
    Interval i;
    std::memcpy(i.digest, digest, 20);
    i.depth = depth;
    i.lower = 0;
    i.upper = n;
    stack_.push_back(i);
  }

  Tree tree_;
  std::vector<Interval> stack_;
  uint64_t count_ = 0;
};

}  // namespace fox::apps::uts
