// The default job (`make run`): every node of a local cluster takes a range
// of job-wide Ebb ids from the GlobalIdMap (served by node 0), reports it to
// node 0, which checks the ranges are disjoint and then sends a token
// around the ring of nodes (node 0 -> 1 -> ... -> 0) through the Messenger
// for a number of laps, timing each lap. Then node 0 tells everyone the
// job is done, waits for their goodbyes, and every node exits 0.
//
//   boot args: fox.node=I fox.ip=... fox.peers=0@IP,1@IP,... -- [laps=N] [ids=K] [pings=P]
//
// pings=P (a job of node 0 and at least two more): before the laps, the
// first node after node 0 sends P messages one at a time to the second,
// which echoes each, and prints the round trips' median, 10th and 90th
// percentiles (make bench B=hosts: two nodes on one host or on two).
//
// A node that dies during the job (phi accrual detector) fails it: the
// survivors say so and exit 1. Nothing waits forever: joining has
// a deadline (join=SECONDS, 60), and so has the job.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "fox/boot_args.h"
#include "fox/clock.h"
#include "fox/core.h"
#include "fox/ebb/global_id_map.h"
#include "fox/ebb/messenger.h"
#include "fox/future.h"
#include "fox/net/am.h"
#ifdef FOX_NATIVE
#include "fox/net/ip.h"
#endif
#include "fox/timer.h"

namespace {

using fox::HandlerId;
using fox::NodeId;
using fox::ebb::Messenger;

constexpr fox::ebb::EbbId kRingId = fox::ebb::StaticId("app.ring");
enum : uint16_t { kHello = 1, kToken, kDone, kBye, kPingStart, kPing, kPong, kPingsDone };

struct Hello {
  uint32_t node, first, count;
};
struct Token {
  uint64_t lap;
  uint32_t hops;
};
struct PingStart {
  uint32_t peer, count;
};

struct Job {
  std::vector<NodeId> ring;  // every node of the job, in id order
  NodeId self = 0;
  uint64_t laps = 100;
  uint32_t ids = 16;
  uint32_t pings = 0;
  // The pinging node's view.
  NodeId ping_peer = 0;
  uint64_t ping_sent = 0;
  std::vector<uint64_t> ping_ns;
  // Node 0's view.
  std::vector<Hello> hellos;
  std::vector<uint64_t> lap_ns;
  uint64_t lap_started = 0;
  size_t byes = 0;
  bool done_sent = false;
  fox::Promise<int> finished;  // the exit status
  bool over = false;
};
Job g;

NodeId Next() {
  auto it = std::find(g.ring.begin(), g.ring.end(), g.self);
  return ++it == g.ring.end() ? g.ring.front() : *it;
}

void Finish(int status) {
  if (g.over) return;
  g.over = true;
  g.finished.SetValue(status);
}

void Send(NodeId to, HandlerId handler, const void* data, size_t len) {
  auto r = Messenger::Get()->SendWait(to, kRingId, handler, data, len);
  if (!r.ok()) {
    std::printf("ring: node %u: sending to node %u failed: %s\n", g.self, to, fox::ErrorName(r.error()));
    Finish(1);
    return;
  }
  Messenger::Get()->Flush(to);
}

void StartLap(uint64_t lap) {
  g.lap_started = fox::clock::NowNs();
  Token t{lap, 0};
  Send(Next(), kToken, &t, sizeof t);
}

// Node 0: every node has reported its id range.
void AllJoined() {
  std::sort(g.hellos.begin(), g.hellos.end(), [](const Hello& a, const Hello& b) { return a.first < b.first; });
  for (size_t i = 1; i < g.hellos.size(); ++i) {
    if (g.hellos[i - 1].first + g.hellos[i - 1].count > g.hellos[i].first) {
      std::printf("ring: the id ranges of nodes %u and %u overlap\n", g.hellos[i - 1].node, g.hellos[i].node);
      Finish(1);
      return;
    }
  }
  std::printf("ring: %zu nodes joined, with disjoint job-wide Ebb id ranges\n", g.hellos.size());
  if (g.ring.size() == 1) {  // alone: nothing to go around
    Finish(0);
    return;
  }
  if (g.pings > 0 && g.ring.size() >= 3) {
    PingStart p{g.ring[2], g.pings};
    Send(g.ring[1], kPingStart, &p, sizeof p);  // the laps follow its kPingsDone
    return;
  }
  if (g.pings > 0) std::printf("ring: pings=%u needs two nodes besides node 0: none sent\n", g.pings);
  StartLap(0);
}

void SendPing(uint64_t seq) {
  g.ping_sent = fox::clock::NowNs();
  Send(g.ping_peer, kPing, &seq, sizeof seq);
}

// The pinging node: an echo came back.
void PongCame(uint64_t seq) {
  g.ping_ns.push_back(fox::clock::NowNs() - g.ping_sent);
  if (seq + 1 < g.pings) {
    SendPing(seq + 1);
    return;
  }
  std::vector<uint64_t> sorted = g.ping_ns;
  std::sort(sorted.begin(), sorted.end());
  auto at = [&](double q) { return sorted[size_t(q * double(sorted.size() - 1))] / 1000.0; };
  std::printf("ring: %zu round trips between node %u and node %u: median %.1f us, p10 %.1f us, p90 %.1f us\n",
              sorted.size(), g.self, g.ping_peer, at(0.5), at(0.1), at(0.9));
  Send(0, kPingsDone, nullptr, 0);
}

// Node 0: the token came back.
void LapDone(const Token& t) {
  g.lap_ns.push_back(fox::clock::NowNs() - g.lap_started);
  if (t.hops != g.ring.size() - 1) {
    std::printf("ring: lap %llu took %u hops, expected %zu\n", (unsigned long long)t.lap, t.hops, g.ring.size() - 1);
    Finish(1);
    return;
  }
  if (t.lap + 1 < g.laps) {
    StartLap(t.lap + 1);
    return;
  }
  std::vector<uint64_t> sorted = g.lap_ns;
  std::sort(sorted.begin(), sorted.end());
  double median = sorted[sorted.size() / 2] / 1000.0;
  std::printf("ring: %llu laps around %zu nodes: median lap %.1f us (%.1f us per hop), fastest %.1f us\n",
              (unsigned long long)g.laps, g.ring.size(), median, median / double(g.ring.size()),
              sorted.front() / 1000.0);
  g.done_sent = true;
  for (NodeId n : g.ring) {
    if (n != g.self) Send(n, kDone, nullptr, 0);
  }
  if (g.ring.size() == 1) Finish(0);
}

// Node 0: one more node is done (it said goodbye, or died after being
// told the job was done).
void Goodbye() {
  if (++g.byes == g.ring.size() - 1) {
    std::printf("ring: every node said goodbye: job done\n");
    Finish(0);
  }
}

// Messages, as events on core 0 (the Messenger's Listen): handlers may block.
void OnMessage(NodeId from, HandlerId handler, const uint8_t* data, size_t len) {
  switch (Raw(handler)) {
    case kHello: {
      Hello h{};
      if (g.self != 0 || len != sizeof h) break;
      std::memcpy(&h, data, sizeof h);
      g.hellos.push_back(h);
      if (g.hellos.size() == g.ring.size()) AllJoined();
      return;
    }
    case kToken: {
      Token t{};
      if (len != sizeof t) break;
      std::memcpy(&t, data, sizeof t);
      if (g.self == 0) {
        LapDone(t);
      } else {
        ++t.hops;
        Send(Next(), kToken, &t, sizeof t);
      }
      return;
    }
    case kDone:
      std::printf("ring: node %u: done, %s\n", g.self, "saying goodbye");
      Send(from, kBye, nullptr, 0);
      Finish(0);
      return;
    case kBye:
      if (g.self == 0) Goodbye();
      return;
    case kPingStart: {
      PingStart p{};
      if (len != sizeof p) break;
      std::memcpy(&p, data, sizeof p);
      if (p.count == 0 || p.count > 1'000'000 || p.peer == g.self) break;
      g.ping_peer = p.peer;
      g.pings = p.count;
      SendPing(0);
      return;
    }
    case kPing:
      if (len != sizeof(uint64_t)) break;
      Send(from, kPong, data, len);
      return;
    case kPong: {
      uint64_t seq = 0;
      if (len != sizeof seq || from != g.ping_peer) break;
      std::memcpy(&seq, data, sizeof seq);
      if (seq != g.ping_ns.size()) break;
      PongCame(seq);
      return;
    }
    case kPingsDone:
      if (g.self != 0) break;
      StartLap(0);
      return;
    default: break;
  }
  std::printf("ring: node %u: bad message (handler %u, %zu bytes) from node %u\n", g.self, Raw(handler), len, from);
}

bool ParseArgs(int argc, char** argv, uint64_t* join_s) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    size_t eq = a.find('=');
    char* end = nullptr;
    uint64_t v = eq == std::string_view::npos ? 0 : std::strtoull(argv[i] + eq + 1, &end, 10);
    bool number = eq != std::string_view::npos && eq + 1 < a.size() && end != nullptr && *end == '\0';
    std::string_view key = a.substr(0, eq);
    if (number && key == "laps" && v >= 1 && v <= 1'000'000) {
      g.laps = v;
    } else if (number && key == "ids" && v >= 1 && v <= 65536) {
      g.ids = uint32_t(v);
    } else if (number && key == "join" && v >= 1 && v <= 3600) {
      *join_s = v;
    } else if (number && key == "pings" && v <= 1'000'000) {
      g.pings = uint32_t(v);
    } else {
      std::printf(
          "ring: bad argument '%s' (expected laps=1..1000000, ids=1..65536, join=1..3600 or pings=0..1000000)\n",
          argv[i]);
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t join_s = 60;
  if (!ParseArgs(argc, argv, &join_s)) return 2;
  auto config = fox::am::ConfigFromBootArgs();
  if (!config.ok()) return 2;
  g.self = config->self;
  const char* peers = fox::BootArg("fox.peers");
  if (peers == nullptr) {
    std::printf("ring: no fox.peers: the job needs the list of its nodes (fox.peers=0@IP,1@IP,...)\n");
    return 2;
  }
  (void)fox::am::ParsePeers(peers, config->port, [](NodeId n, uint32_t, uint16_t) { g.ring.push_back(n); });
  if (std::find(g.ring.begin(), g.ring.end(), g.self) == g.ring.end()) g.ring.push_back(g.self);
  std::sort(g.ring.begin(), g.ring.end());
  g.ring.erase(std::unique(g.ring.begin(), g.ring.end()), g.ring.end());
  if (g.ring.front() != 0) {
    std::printf("ring: node 0 (the GlobalIdMap's server and the ring's start) is not in fox.peers\n");
    return 2;
  }

#ifdef FOX_NATIVE
  fox::net::InterfaceInfo info;
  if (int status = fox::net::StartFromBootArgs("ring", &info); status != 0) return status;
  std::string where = info.address.ToString();
#else
  std::string where = "a Linux process";  // the host's network: a place 0 on the frontend
#endif
  // Receivers before the transport: a message for an Ebb without one is dropped.
  if (!Messenger::Get()->Listen(kRingId, OnMessage).ok()) return 1;
  (void)fox::ebb::GlobalIdMap::Get()->server();  // node 0 serves it
  if (auto r = fox::am::Start(*config); !r.ok()) {
    std::printf("ring: node %u: cannot start the transport: %s\n", g.self, fox::ErrorName(r.error()));
    return 1;
  }
  fox::am::OnPeerState([](NodeId n, fox::am::PeerState s) {
    if (s != fox::am::PeerState::kDead || g.over) return;
    if (g.self == 0 && g.done_sent) {  // its goodbye was lost: it was done
      Goodbye();
      return;
    }
    std::printf("ring: node %u: node %u died: the job fails\n", g.self, n);
    Finish(1);
  });
  std::printf("ring: node %u of %zu at %s, %llu laps\n", g.self, g.ring.size(), where.c_str(),
              (unsigned long long)g.laps);
  std::fflush(stdout);

  auto finished = g.finished.GetFuture();
  // A deadline for the whole job: joining, then the laps at 1 ms each at least.
  uint64_t deadline_ms = join_s * 1000 + (g.laps + g.pings) * g.ring.size() + 10'000;
  auto timer = fox::timer::Start(deadline_ms * 1'000'000, [] {
    std::printf("ring: node %u: the job did not finish in time\n", g.self);
    Finish(1);
  });

  // Join: take job-wide ids from node 0's GlobalIdMap (it retries until node
  // 0 answers or is declared dead), and report them to node 0.
  auto range = fox::ebb::GlobalIdMap::Get()->AcquireRange(g.ids).Block();
  if (!range.ok()) {
    std::printf("ring: node %u: no job-wide ids from node 0: %s\n", g.self, fox::ErrorName(range.error()));
    Finish(1);
  } else {
    std::printf("ring: node %u: job-wide Ebb ids [%#x, %#x)\n", g.self, Raw(range->first),
                Raw(range->first) + range->count);
    Hello h{g.self, Raw(range->first), range->count};
    if (g.self == 0) {
      OnMessage(0, kHello, reinterpret_cast<const uint8_t*>(&h), sizeof h);
    } else {
      Send(0, kHello, &h, sizeof h);
    }
  }
  int status = finished.Block();
  fox::timer::Cancel(timer);
  fox::am::LogStats();  // the goodbye leaves before the node ends: am lingers at exit
  return status;
}
