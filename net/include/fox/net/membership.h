// Membership and failure detection for one node of a job: SWIM (Das,
// Gupta and Motivala, DSN 2002) with suspicion and refutation, as pure
// logic. No sockets, no clock, no locks: time is passed in and messages go
// out through a callback, so the same code runs in the AM endpoint (native
// and hosted) and in a simulation of a thousand nodes in simulated time
// (tests/unit/net_membership_test.cc, tests/bench/scale_sim.cc).
//
// Cost per node does not grow with the job: every `probe_period_ns` a node
// probes ONE member (round robin over a shuffled list), so it sends about
// one ping and answers about one ping per period, whatever the job's size.
//
// A probe of B by A:
//   1. A sends B a ping; B answers with an ack.
//   2. No ack after `probe_timeout_ns`: A asks `indirect_probes` other
//      members to ping B for it (ping-req); their acks come back through them.
//   3. Still nothing from B (no ack, and no other frame: the transport calls
//      HeardFrom for every authenticated frame) when the period ends: A
//      suspects B. The suspicion spreads by gossip and A pings B with it, so
//      a B that is alive hears it and refutes it: it raises its incarnation
//      number and gossips "alive" with the new number, which overrides the
//      suspicion everywhere.
//   4. A suspicion nobody refuted for `suspicion_ns` makes A declare B
//      dead: the `declare` callback, by which the transport tells every
//      node at once (fail-stop: a dead member stays dead, its id is never
//      reused, and a "dead" heard from anyone is believed). Meanwhile A
//      pings B with the suspicion every period, so that a B that is alive
//      hears of it although messages are lost, and refutes it to A
//      directly. Only a node whose own probe failed declares: one that
//      heard of the suspicion by gossip marks B suspected and passes it on,
//      and declares only if its own probe of B fails too. (Were every
//      node's timer to declare, the refutation would have to reach all of
//      them in time: in a job of 1024 nodes with 5% of messages lost, gossip
//      could not carry them all, and live nodes died.)
//
// Joins spread too: a node that hears from a member for the first time
// gossips "alive" about it, so that every node soon knows every member as
// joined (and suspects it if its probes fail) without having met it.
//
// Updates (alive, suspect, dead, with the member and incarnation) ride on
// every ping and ack, each sent `retransmit_mult * ceil(log2(n + 1))` times,
// so that an update reaches every node in O(log n) periods (epidemic).
//
// Start-up is not failure: a member never heard from (booting, joining) is
// probed (so that it learns of us and we of it) but not suspected before
// `join_timeout_ns` since it was added; then it is suspected as after a
// failed probe (a member that runs refutes, one that never booted is
// declared dead a suspicion later). A member is joined once anything from
// it, or an "alive" update about it, arrives.
//
// A node that was not running (descheduled by its host, paused) does not
// blame others for its own silence: when Tick comes more than two periods
// after the previous one, the probe in progress is dropped, not judged.
//
// Contexts: AddMember allocates (normal context). Everything else never
// allocates, blocks or throws and may run at interrupt level (the AM
// receive path). One caller at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "fox/net/function_ref.h"
#include "fox/net/ids.h"

namespace fox::net {

struct MembershipConfig {
  NodeId self = 0;
  // Defaults for a rack: detection of a death by every node within
  // ~1.9 s at the 99th percentile for 1024 nodes, ~13 messages per node per
  // second (the simulation prints both: make bench B=scale). Emulated
  // clusters on a shared host use longer timeouts (boot arguments
  // fox.probe_ms and fox.suspect_ms; the frontend sets them).
  uint64_t probe_period_ns = 150'000'000;
  uint64_t probe_timeout_ns = 60'000'000;  // direct ack awaited this long, then indirect probes
  int indirect_probes = 5;
  uint64_t suspicion_ns = 1'000'000'000;
  uint64_t join_timeout_ns = 60'000'000'000;
  int retransmit_mult = 3;
  uint64_t seed = 1;  // probe order; any value, different per node
};

enum class MemberState : uint8_t { kJoining, kAlive, kSuspected, kDead };
const char* MemberStateName(MemberState state);

struct MembershipCounters {
  uint64_t pings_sent = 0;  // direct, and on behalf of others
  uint64_t acks_sent = 0;   // answers, and acks relayed to who asked
  uint64_t ping_reqs_sent = 0;
  uint64_t messages_received = 0;
  uint64_t bad_messages = 0;   // malformed, ignored
  uint64_t send_failures = 0;  // the transport could not take one (counted as lost)
  uint64_t probes = 0;
  uint64_t probes_indirect = 0;     // needed step 2
  uint64_t probes_failed = 0;       // ended without a sign of life
  uint64_t probes_skipped = 0;      // dropped: this node was not running
  uint64_t suspicions = 0;          // members this node came to suspect (own probe or gossip)
  uint64_t refutations = 0;         // suspicions of this node it refuted
  uint64_t declared_dead = 0;       // suspicions that expired here
  uint64_t updates_sent = 0;        // gossip entries piggybacked
  uint64_t self_declared_dead = 0;  // another node declared this one dead
};

class Membership {
 public:
  // Sends one membership message to `to` (the transport wraps it; false:
  // not sent, counted as lost).
  using SendFn = FunctionRef<bool(NodeId to, const uint8_t* message, size_t len)>;
  // A member changed state (joined: kAlive; kSuspected; kAlive again after
  // a refutation; kDead from an update). Not called for MarkDead.
  using StateFn = FunctionRef<void(NodeId member, MemberState state)>;
  // This node's suspicion of `member` expired: the caller declares it dead
  // everywhere (and calls MarkDead).
  using DeclareFn = FunctionRef<void(NodeId member)>;

  // Largest message Encode produces.
  static constexpr size_t kMaxMessageBytes = 128;
  static constexpr int kUpdatesPerMessage = 8;

  explicit Membership(const MembershipConfig& config);

  // A member of the job, not yet heard from (normal context: allocates).
  // Ignored for self and for members already known.
  void AddMember(NodeId member, uint64_t now_ns);

  // A membership message from `from`. Also counts as a sign of life.
  void OnMessage(NodeId from, const uint8_t* data, size_t len, uint64_t now_ns, SendFn send, StateFn on_state);
  // Any other sign of life from `from` (an authenticated frame).
  void HeardFrom(NodeId from, uint64_t now_ns, StateFn on_state);
  // The member is dead (the transport's verdict: a notice, the frontend,
  // or our own `declare`). Final. Spread as an update. For self: this
  // node was declared dead; it stops probing and judging (fail-stop).
  void MarkDead(NodeId member);

  // Runs the protocol's timers: starts, escalates and judges probes and
  // expires suspicions. Returns the absolute time to call it again.
  uint64_t Tick(uint64_t now_ns, SendFn send, StateFn on_state, DeclareFn declare);

  MemberState State(NodeId member) const;
  // When the member last gave a sign of life (0: never).
  uint64_t LastHeardNs(NodeId member) const;
  uint32_t incarnation() const { return incarnation_; }
  size_t member_count() const { return members_.size(); }
  size_t live_count() const { return live_; }
  // Another node declared this one dead (fail-stop: peers ignore it now).
  bool declared_dead() const { return counters_.self_declared_dead != 0; }
  const MembershipCounters& counters() const { return counters_; }
  const MembershipConfig& config() const { return config_; }

 private:
  struct Member {
    NodeId id = 0;
    MemberState state = MemberState::kJoining;
    uint32_t incarnation = 0;
    uint64_t added_ns = 0;
    uint64_t last_heard_ns = 0;
    uint64_t suspect_since_ns = 0;
    bool own = false;        // suspected by our own failed probe (not only by gossip)
    uint64_t pinged_ns = 0;  // own suspicion: when we last pinged it with the suspicion
  };
  enum class Kind : uint8_t { kAlive = 1, kSuspect = 2, kDead = 3 };
  struct Update {
    Kind kind;
    NodeId node;
    uint32_t incarnation;
    int sends_left;
    bool join;  // "alive" only because it joined: yields to suspicions, refutations and deaths
  };
  enum class Type : uint8_t { kPing = 1, kAck = 2, kPingReq = 3 };

  Member* Find(NodeId id);
  const Member* Find(NodeId id) const;
  void Send(Type type, NodeId to, uint32_t seq, NodeId target, NodeId origin, SendFn send);
  void Queue(Kind kind, NodeId node, uint32_t incarnation, bool join = false);
  static bool Before(const Update& a, const Update& b);
  void Apply(Kind kind, NodeId node, uint32_t incarnation, uint64_t now_ns, StateFn on_state);
  void Join(Member& m, uint64_t now_ns, StateFn on_state);
  void Suspect(Member& m, uint32_t incarnation, uint64_t now_ns, StateFn on_state);
  void StartProbe(uint64_t now_ns, SendFn send);
  void EndProbe(uint64_t now_ns, SendFn send, StateFn on_state);
  NodeId NextTarget();
  uint32_t Random();
  int Transmissions() const;

  MembershipConfig config_;
  std::vector<Member> members_;
  std::unordered_map<NodeId, uint32_t> index_;  // id -> members_ position
  std::vector<uint32_t> order_;                 // probe order: members_ positions, shuffled
  size_t next_in_order_ = 0;
  size_t live_ = 0;       // members not dead
  size_t joining_ = 0;    // members never heard from
  size_t suspected_ = 0;  // members suspected
  uint32_t incarnation_ = 0;
  uint64_t rng_;
  // Gossip: a fixed number of pending updates. Joins go after the others
  // and are evicted first; among equals, the newest replace the most-sent.
  static constexpr int kQueue = 64;
  Update queue_[kQueue] = {};
  int queued_ = 0;
  // The probe in progress.
  bool probing_ = false;
  NodeId target_ = 0;
  uint32_t seq_ = 0;
  uint64_t probe_start_ns_ = 0;
  bool acked_ = false;
  bool indirect_sent_ = false;
  uint64_t next_probe_ns_ = 0;
  uint64_t last_tick_ns_ = 0;
  MembershipCounters counters_;
};

}  // namespace fox::net
