// A job of N nodes running net::Membership in simulated time, over a
// network with latency and loss: for the protocol's unit tests
// (net_membership_test.cc) and for its figures at 1024 nodes
// (tests/bench/scale_sim.cc, make bench B=scale).
//
// What it models: every membership message is one datagram with a random
// latency, lost with probability `loss` (the real transport retransmits
// lost frames; losing them here is the harsher case). A node that declares
// another dead tells every node (the transport's death notice: reliable,
// so never lost, only delayed). A killed node stops; a paused node runs no
// timer and receives nothing until it resumes, then gets what arrived
// meanwhile (a descheduled VM); a partition drops what crosses it.
#pragma once

#include <cstdint>
#include <memory>
#include <queue>
#include <vector>

#include "fox/net/membership.h"

namespace fox::sim {

struct SimConfig {
  int nodes = 16;
  net::MembershipConfig membership;  // self and seed are set per node
  double loss = 0;
  uint64_t min_latency_ns = 100'000;
  uint64_t max_latency_ns = 300'000;
  uint64_t boot_spread_ns = 0;  // node i starts at a random time in [0, this)
  uint64_t seed = 1;
};

// One node coming to see another as dead.
struct DeadView {
  uint64_t at_ns;
  int observer;
  int member;
};

class MembershipSim {
 public:
  explicit MembershipSim(const SimConfig& config);
  ~MembershipSim();

  void RunUntil(uint64_t t_ns);
  uint64_t now() const { return now_; }

  void Kill(int node);                         // at now()
  void Pause(int node, uint64_t duration_ns);  // from now()
  // Until Heal, messages between nodes in `side` (true) and the others are lost.
  void Partition(std::vector<bool> side);
  void Heal();

  const std::vector<DeadView>& dead_views() const { return dead_views_; }
  // Dead views of `member` by live, unpaused observers, and how many such
  // observers there are.
  int ObserversOf(int member) const;
  bool Killed(int node) const { return killed_[node]; }
  net::MemberState View(int observer, int member) const;
  const net::Membership& node(int i) const { return *nodes_[i]; }
  uint64_t messages_sent() const { return messages_sent_; }  // membership messages and death notices
  uint64_t messages_lost() const { return messages_lost_; }
  // Ticks that asked to be called again at once (a busy loop: a bug).
  uint64_t busy_ticks() const { return busy_ticks_; }

 private:
  enum class Kind : uint8_t { kTick, kMessage, kNotice };
  struct Event {
    uint64_t at;
    uint64_t seq;
    Kind kind;
    int to;
    int from;      // kNotice: the dead member
    int declarer;  // kNotice: who declared it
    uint8_t len;
    uint8_t bytes[net::Membership::kMaxMessageBytes];
    bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  void Push(Event e);
  void Run(Event& e);
  uint64_t Latency();
  double Uniform();
  void Record(int observer, int member);
  bool Crosses(int a, int b) const;

  SimConfig config_;
  std::vector<std::unique_ptr<net::Membership>> nodes_;
  std::vector<bool> killed_;
  std::vector<uint64_t> paused_until_;
  std::vector<uint64_t> boot_at_;
  std::vector<uint64_t> tick_at_;  // the node's scheduled tick (one at a time)
  std::vector<std::vector<bool>> seen_dead_;
  std::vector<bool> side_;
  bool partitioned_ = false;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> queue_;
  std::vector<DeadView> dead_views_;
  uint64_t now_ = 0;
  uint64_t seq_ = 0;
  uint64_t rng_;
  uint64_t messages_sent_ = 0;
  uint64_t messages_lost_ = 0;
  uint64_t busy_ticks_ = 0;
};

}  // namespace fox::sim
