// apps/bfs's pieces: the Kronecker generator (kronecker.h), the search over
// parts (search.h, here threads standing in for places) against a plain
// queue BFS of the whole edge list, in each direction and in Beamer's mix,
// and Graph500's validation (validate.h) catching broken trees.
#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "../../apps/bfs/search.h"

namespace {

using namespace fox::apps::bfs;
using fox::apps::kronecker::Graph;

TEST(Kronecker, PermutationIsABijection) {
  for (uint32_t scale = 1; scale <= 14; ++scale) {
    Graph g(scale, 16, 7);
    std::vector<bool> seen(g.vertices());
    for (uint64_t x = 0; x < g.vertices(); ++x) {
      uint64_t y = g.Permute(x);
      ASSERT_LT(y, g.vertices());
      ASSERT_FALSE(seen[y]) << "scale " << scale << ": " << x << " lands on a taken label";
      seen[y] = true;
    }
  }
}

TEST(Kronecker, EdgesAreSkewedAndReproducible) {
  Graph g(12, 16, 1), same(12, 16, 1), other(12, 16, 2);
  std::vector<uint64_t> degree(g.vertices());
  uint64_t differ = 0;
  for (uint64_t e = 0; e < g.edges(); ++e) {
    auto [u, v] = g.Edge(e);
    ASSERT_LT(u, g.vertices());
    ASSERT_LT(v, g.vertices());
    ASSERT_EQ(same.Edge(e), g.Edge(e));
    differ += other.Edge(e) != g.Edge(e);
    ++degree[u];
    ++degree[v];
  }
  EXPECT_GT(differ, g.edges() * 9 / 10);
  uint64_t max = *std::max_element(degree.begin(), degree.end());
  uint64_t isolated = uint64_t(std::count(degree.begin(), degree.end(), 0));
  // A Kronecker graph: hubs of hundreds of times the mean degree (32),
  // and many vertices without an edge.
  EXPECT_GT(max, 20 * 32u);
  EXPECT_GT(isolated, g.vertices() / 10);
}

// search.h's communicator for parts that are threads of one process.
struct Shared {
  explicit Shared(uint32_t n) : parts(n), sync(n), boxes(n), words(n), sums(n), maxes(n) {}
  uint32_t parts;
  std::barrier<> sync;
  std::vector<std::vector<std::vector<uint32_t>>> boxes;
  std::vector<std::vector<uint64_t>> words, sums;
  std::vector<double> maxes;
};

class ThreadComm {
 public:
  ThreadComm(Shared* s, uint32_t rank) : s_(s), rank_(rank) {}
  uint32_t Rank() const { return rank_; }
  uint32_t Parts() const { return s_->parts; }
  std::vector<std::vector<uint32_t>> Alltoall(std::vector<std::vector<uint32_t>> out) {
    s_->boxes[rank_] = std::move(out);
    s_->sync.arrive_and_wait();
    std::vector<std::vector<uint32_t>> in(Parts());
    for (uint32_t p = 0; p < Parts(); ++p) in[p] = s_->boxes[p][rank_];
    s_->sync.arrive_and_wait();
    return in;
  }
  std::vector<uint64_t> Allgather(const std::vector<uint64_t>& mine) {
    s_->words[rank_] = mine;
    s_->sync.arrive_and_wait();
    std::vector<uint64_t> all;
    for (const auto& w : s_->words) all.insert(all.end(), w.begin(), w.end());
    s_->sync.arrive_and_wait();
    return all;
  }
  std::vector<uint64_t> Sum(const std::vector<uint64_t>& values) {
    s_->sums[rank_] = values;
    s_->sync.arrive_and_wait();
    std::vector<uint64_t> total(values.size());
    for (const auto& v : s_->sums) {
      for (size_t i = 0; i < v.size(); ++i) total[i] += v[i];
    }
    s_->sync.arrive_and_wait();
    return total;
  }
  double Max(double value) {
    s_->maxes[rank_] = value;
    s_->sync.arrive_and_wait();
    double m = *std::max_element(s_->maxes.begin(), s_->maxes.end());
    s_->sync.arrive_and_wait();
    return m;
  }
  void Barrier() { s_->sync.arrive_and_wait(); }
  uint64_t Workers() const { return 2; }  // two shares, one after the other: the merge of workers' output
  template <class F>
  void Parallel(uint64_t count, const F& f) {
    f(0, 0, count / 2);
    f(1, count / 2, count);
  }
  uint64_t NowNs() const {
    return uint64_t(std::chrono::steady_clock::now().time_since_epoch() / std::chrono::nanoseconds(1));
  }

 private:
  Shared* s_;
  uint32_t rank_;
};

// The distances from `root` over the whole edge list, by a queue.
std::vector<int32_t> Distances(const Graph& kg, uint64_t root) {
  std::vector<std::vector<uint64_t>> adj(kg.vertices());
  for (uint64_t e = 0; e < kg.edges(); ++e) {
    auto [u, v] = kg.Edge(e);
    adj[u].push_back(v);
    adj[v].push_back(u);
  }
  std::vector<int32_t> d(kg.vertices(), -1);
  std::deque<uint64_t> queue{root};
  d[root] = 0;
  while (!queue.empty()) {
    uint64_t u = queue.front();
    queue.pop_front();
    for (uint64_t v : adj[u]) {
      if (d[v] == -1) {
        d[v] = d[u] + 1;
        queue.push_back(v);
      }
    }
  }
  return d;
}

struct PartResult {
  std::vector<uint64_t> roots;
  std::vector<Search> searches;
  std::vector<std::vector<int32_t>> depths;  // per root, the part's vertices
  std::vector<uint64_t> errors;
  uint64_t begin = 0;
};

// Every part's search from the same roots, as threads.
std::vector<PartResult> SearchAll(const Graph& kg, uint32_t parts, int force, uint64_t nroots) {
  Shared shared(parts);
  std::vector<PartResult> results(parts);
  std::vector<std::thread> threads;
  for (uint32_t p = 0; p < parts; ++p) {
    threads.emplace_back([&, p] {
      ThreadComm comm(&shared, p);
      Partition part(kg.vertices(), parts);
      LocalGraph g = Build(comm, kg, part);
      uint64_t all_edges = comm.Sum({uint64_t(g.adj.size())})[0];
      PartResult& r = results[p];
      r.begin = g.begin;
      r.roots = Roots(comm, g, part, nroots, 3);
      std::vector<int64_t> parent(g.count);
      std::vector<int32_t> depth(g.count);
      for (uint64_t root : r.roots) {
        r.searches.push_back(SearchFrom(comm, g, part, root, all_edges, &parent, &depth, force));
        r.depths.push_back(depth);
        r.errors.push_back(Check(comm, g, part, root, parent, depth).errors);
      }
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

TEST(BfsSearch, EveryDirectionGivesTheQueuesDistances) {
  Graph kg(11, 8, 5);
  for (uint32_t parts : {1u, 3u, 4u}) {
    for (int force : {0, 1, 2}) {
      auto results = SearchAll(kg, parts, force, 3);
      ASSERT_EQ(results[0].roots.size(), 3u);
      for (size_t k = 0; k < results[0].roots.size(); ++k) {
        uint64_t root = results[0].roots[k];
        std::vector<int32_t> want = Distances(kg, root);
        uint64_t reached = 0, edges = 0;
        for (uint64_t v = 0; v < kg.vertices(); ++v) reached += want[v] != -1;
        for (uint64_t e = 0; e < kg.edges(); ++e) edges += want[kg.Edge(e).first] != -1;
        for (const PartResult& r : results) {
          ASSERT_EQ(r.roots[k], root);
          EXPECT_EQ(r.errors[k], 0u);
          EXPECT_EQ(r.searches[k].vertices, reached);
          EXPECT_EQ(r.searches[k].edges, edges);
          for (size_t v = 0; v < r.depths[k].size(); ++v) {
            ASSERT_EQ(r.depths[k][v], want[r.begin + v])
                << "vertex " << r.begin + v << ", " << parts << " parts, force " << force;
          }
        }
        if (force == 1) EXPECT_EQ(results[0].searches[k].bottom_up, 0);
        if (force == 2) EXPECT_EQ(results[0].searches[k].bottom_up, results[0].searches[k].steps);
      }
    }
  }
}

TEST(BfsSearch, BeamersHeuristicGoesBottomUpOnTheBigLevels) {
  Graph kg(12, 16, 1);
  auto results = SearchAll(kg, 2, 0, 2);
  for (const Search& s : results[0].searches) {
    EXPECT_GT(s.bottom_up, 0);
    EXPECT_LT(s.bottom_up, s.steps);
  }
}

// One part: a search, then its tree broken in each of Graph500's ways.
class Validation : public ::testing::Test {
 protected:
  void SetUp() override {
    Shared shared(1);
    ThreadComm comm(&shared, 0);
    part = Partition(kg.vertices(), 1);
    g = Build(comm, kg, part);
    root = Roots(comm, g, part, 1, 9)[0];
    parent.resize(g.count);
    depth.resize(g.count);
    SearchFrom(comm, g, part, root, g.adj.size(), &parent, &depth);
  }
  Verdict Validated() const { return Validate(g, part.n, root, parent.data(), depth.data(), depth.data()); }
  // A vertex at `at` levels from the root.
  uint64_t At(int32_t at) const {
    for (uint64_t v = 0; v < g.count; ++v) {
      if (depth[v] == at) return v;
    }
    return 0;
  }
  // One that is nobody's parent (changing it breaks no other vertex).
  uint64_t Leaf(int32_t at) const {
    for (uint64_t v = 0; v < g.count; ++v) {
      if (depth[v] == at && std::find(parent.begin(), parent.end(), int64_t(v)) == parent.end()) return v;
    }
    ADD_FAILURE() << "no leaf at depth " << at;
    return 0;
  }

  Graph kg{10, 8, 4};
  Partition part;
  LocalGraph g;
  uint64_t root = 0;
  std::vector<int64_t> parent;
  std::vector<int32_t> depth;
};

TEST_F(Validation, TheSearchsTreeIsValid) { EXPECT_EQ(Validated().errors, 0u); }

TEST_F(Validation, CatchesAWrongRoot) {
  parent[root] = int64_t(At(1));
  EXPECT_NE(Validated().first.find("not itself at 0"), std::string::npos) << Validated().first;
}

TEST_F(Validation, CatchesAParentNotOneLevelUp) {
  parent[At(2)] = int64_t(root);  // two levels up
  Verdict verdict = Validated();
  EXPECT_GT(verdict.errors, 0u);
  EXPECT_NE(verdict.first.find("not one level up"), std::string::npos) << verdict.first;
}

TEST_F(Validation, CatchesAParentWithoutAnEdge) {
  uint64_t v = At(2), p = uint64_t(parent[v]);
  // Another vertex at p's depth that is not v's neighbour.
  for (uint64_t w = 0; w < g.count; ++w) {
    const uint32_t* adj = g.Neighbours(v);
    if (w == p || depth[w] != depth[p] || std::find(adj, adj + g.Degree(v), w) != adj + g.Degree(v)) continue;
    parent[v] = int64_t(w);
    break;
  }
  ASSERT_NE(uint64_t(parent[v]), p);
  EXPECT_NE(Validated().first.find("no edge to its parent"), std::string::npos) << Validated().first;
}

TEST_F(Validation, CatchesAComponentNotSpanned) {
  uint64_t v = Leaf(1);
  parent[v] = -1;
  depth[v] = -1;
  EXPECT_NE(Validated().first.find("one end reached, the other not"), std::string::npos) << Validated().first;
}

TEST_F(Validation, CatchesLevelsThatAreNotDistances) {
  // A leaf at depth 1 moved to depth 3 under a vertex at depth 2 (its
  // neighbour, so the tree edge exists): its edge to the root spans 3 levels.
  for (uint64_t v = 0; v < g.count; ++v) {
    if (depth[v] != 1 || std::find(parent.begin(), parent.end(), int64_t(v)) != parent.end()) continue;
    const uint32_t* adj = g.Neighbours(v);
    for (uint64_t k = 0; k < g.Degree(v); ++k) {
      if (depth[adj[k]] == 2) {
        parent[v] = adj[k];
        depth[v] = 3;
        Verdict verdict = Validated();
        EXPECT_GT(verdict.errors, 0u);
        EXPECT_NE(verdict.first.find("ends at depths"), std::string::npos) << verdict.first;
        return;
      }
    }
  }
  FAIL() << "no leaf at depth 1 with a neighbour at depth 2";
}

}  // namespace
