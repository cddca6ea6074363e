// MembershipSim (membership_sim.h).
#include "membership_sim.h"

#include <cstring>

namespace fox::sim {

MembershipSim::MembershipSim(const SimConfig& config)
    : config_(config),
      killed_(size_t(config.nodes), false),
      paused_until_(size_t(config.nodes), 0),
      tick_at_(size_t(config.nodes), 0),
      seen_dead_(size_t(config.nodes), std::vector<bool>(size_t(config.nodes), false)),
      side_(size_t(config.nodes), false),
      rng_(config.seed * 0x9E3779B97F4A7C15ull | 1) {
  for (int i = 0; i < config.nodes; ++i) {
    net::MembershipConfig mc = config.membership;
    mc.self = NodeId(i);
    mc.seed = config.seed * 1000003 + uint64_t(i);
    nodes_.push_back(std::make_unique<net::Membership>(mc));
    uint64_t boot = config.boot_spread_ns == 0 ? 0 : uint64_t(Uniform() * double(config.boot_spread_ns));
    for (int j = 0; j < config.nodes; ++j) nodes_[size_t(i)]->AddMember(NodeId(j), boot);
    // Before its boot a node is like a paused one that then starts.
    paused_until_[size_t(i)] = boot;
    boot_at_.push_back(boot);
    tick_at_[size_t(i)] = boot;
    Event e{};
    e.at = boot;
    e.kind = Kind::kTick;
    e.to = i;
    Push(e);
  }
}

MembershipSim::~MembershipSim() = default;

double MembershipSim::Uniform() {
  rng_ ^= rng_ >> 12;
  rng_ ^= rng_ << 25;
  rng_ ^= rng_ >> 27;
  return double((rng_ * 0x2545F4914F6CDD1Dull) >> 11) / double(1ull << 53);
}

uint64_t MembershipSim::Latency() {
  return config_.min_latency_ns + uint64_t(Uniform() * double(config_.max_latency_ns - config_.min_latency_ns));
}

void MembershipSim::Push(Event e) {
  e.seq = ++seq_;
  queue_.push(e);
}

bool MembershipSim::Crosses(int a, int b) const { return partitioned_ && side_[size_t(a)] != side_[size_t(b)]; }

void MembershipSim::Record(int observer, int member) {
  if (seen_dead_[size_t(observer)][size_t(member)]) return;
  seen_dead_[size_t(observer)][size_t(member)] = true;
  dead_views_.push_back({now_, observer, member});
}

void MembershipSim::Kill(int node) { killed_[size_t(node)] = true; }

void MembershipSim::Pause(int node, uint64_t duration_ns) { paused_until_[size_t(node)] = now_ + duration_ns; }

void MembershipSim::Partition(std::vector<bool> side) {
  side_ = std::move(side);
  partitioned_ = true;
}

void MembershipSim::Heal() { partitioned_ = false; }

net::MemberState MembershipSim::View(int observer, int member) const {
  return nodes_[size_t(observer)]->State(NodeId(member));
}

int MembershipSim::ObserversOf(int member) const {
  int n = 0;
  for (int i = 0; i < config_.nodes; ++i) n += i != member && !killed_[size_t(i)];
  return n;
}

void MembershipSim::RunUntil(uint64_t t_ns) {
  while (!queue_.empty() && queue_.top().at <= t_ns) {
    Event e = queue_.top();
    queue_.pop();
    now_ = e.at;
    Run(e);
  }
  now_ = t_ns;
}

void MembershipSim::Run(Event& e) {
  size_t to = size_t(e.to);
  if (killed_[to]) return;
  if (paused_until_[to] > e.at) {
    if (e.kind != Kind::kTick && e.at < boot_at_[to]) return;  // its NIC is not up yet
    e.at = paused_until_[to];                                  // held until it runs again, in order
    if (e.kind == Kind::kTick) tick_at_[to] = e.at;
    Push(e);
    return;
  }
  net::Membership& node = *nodes_[to];
  auto send = [&](NodeId dest, const uint8_t* m, size_t len) {
    ++messages_sent_;
    if (Uniform() < config_.loss || Crosses(e.to, int(dest))) {
      ++messages_lost_;
      return true;
    }
    Event out{};
    out.at = now_ + Latency();
    out.kind = Kind::kMessage;
    out.to = int(dest);
    out.from = e.to;
    out.len = uint8_t(len);
    std::memcpy(out.bytes, m, len);
    Push(out);
    return true;
  };
  auto on_state = [&](NodeId member, net::MemberState s) {
    if (s == net::MemberState::kDead) Record(e.to, int(member));
  };
  auto declare = [&](NodeId member) {
    Record(e.to, int(member));
    for (int j = 0; j < config_.nodes; ++j) {
      if (j == e.to) continue;  // the dead member too: it learns it and stops
      ++messages_sent_;
      if (Crosses(e.to, j)) continue;
      Event out{};
      out.at = now_ + Latency();
      out.kind = Kind::kNotice;
      out.to = j;
      out.from = int(member);
      out.declarer = e.to;
      Push(out);
    }
  };
  switch (e.kind) {
    case Kind::kTick: {
      if (e.at != tick_at_[to]) return;  // replaced by a later schedule
      uint64_t next = node.Tick(now_, send, on_state, declare);
      if (next == UINT64_MAX) return;
      if (next <= now_) next = now_ + 1, ++busy_ticks_;
      tick_at_[to] = next;
      Event t{};
      t.at = next;
      t.kind = Kind::kTick;
      t.to = e.to;
      Push(t);
      break;
    }
    case Kind::kMessage: node.OnMessage(NodeId(e.from), e.bytes, e.len, now_, send, on_state); break;
    case Kind::kNotice:
      // Like any frame, a notice from a node this one holds dead is dropped.
      if (e.to == e.from) {
        node.MarkDead(NodeId(e.from));
      } else if (node.State(NodeId(e.declarer)) != net::MemberState::kDead &&
                 node.State(NodeId(e.from)) != net::MemberState::kDead) {
        node.MarkDead(NodeId(e.from));
        Record(e.to, e.from);
      }
      break;
  }
}

}  // namespace fox::sim
