// Active messages between the nodes of a job (DESIGN.md "Active messages
// and the network"), the same API on compute nodes and in Linux programs.
//
// A message is addressed to (node, Ebb id, handler id) and carries up to
// net::kMaxMessageBytes bytes. Delivery is reliable, in order and exactly
// once per pair of nodes; small messages are aggregated into MTU-sized UDP
// frames (flushed when full or after Config::flush_delay_ns); a message to
// this node never touches the network. Every frame is authenticated with
// the job key (SipHash-2-4).
//
// Where handlers run — the *delivery context*:
//  - native nodes: at interrupt level, in the NIC's receive interrupt on
//    kernel core 0, before and without lwIP (the FOX report's active
//    messages in the interrupt handler); frames that are not AM frames go
//    on to lwIP;
//  - hosted (Linux): in an event on the transport core (Config::core),
//    which reads the UDP socket from its epoll loop.
// In both, interrupts are off and the transport lock is held: a Receiver
// must not allocate, block, throw or take locks that event code holds
// with interrupts on. It may Send (replies) and write into SAS segments.
//
// Most Ebbs want their messages as events instead: Listen(ebb, core, fn)
// routes them into the receive mailbox of `core` (one per core, whatever
// the number of Ebbs: a ring allocated once), whose drain event calls `fn`
// with a copy of each message. Handlers start in arrival order, each
// message exactly once; a handler may block (SendWait, a future): the
// messages behind it go on in a new drain event meanwhile. A frame is taken
// from the network only when every mailbox has room for a full receive
// window of frames, so a message that was acknowledged is never dropped;
// otherwise the frame is refused unacknowledged (kBackpressure) and the
// sender retransmits it.
//
// A message for an Ebb id with no receiver on this node holds its frame back
// (unacknowledged, so the sender retransmits) for up to 10 s, for Ebbs that
// register a little after their peers start talking to them; after that it
// is dropped and counted (Stats::no_receiver).
//
// Backpressure: Send returns kBusy when the peer's window and aggregation
// buffer are full (SendWait blocks the event instead). A Receiver cannot
// wait: its replies use SendOrDefer, which parks a message that finds the
// peer full in the node's deferred buffer (EndpointConfig::deferred_bytes,
// allocated at Start) until the window opens, keeping per-pair order.
//
// Failure detection: the job's membership protocol (SWIM with suspicion,
// net/membership.h; its cost per node does not grow with the job) and the
// frontend's death notices; OnPeerState callbacks run as events. A dead peer
// stays dead: Sends to it fail with kPeerDead, its late frames are dropped.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "fox/function.h"
#include "fox/nic.h"
#include "fox/net/am_endpoint.h"
#include "fox/net/ids.h"
#include "fox/result.h"

namespace fox::am {

using net::FunctionRef;
using net::PeerState;

inline constexpr uint16_t kDefaultPort = 7700;

struct Config {
  uint64_t job = 1;
  net::SipKey key{};
  bool key_given = false;  // false: the development key derived from the job id
  NodeId self = 0;
  uint16_t port = kDefaultPort;  // UDP port, the same on every node of the job
  int core = 0;                  // transport core: timers, hosted socket (native: 0)
  net::EndpointConfig tuning;    // aggregation, windows, membership (job/key/self ignored)
};

// `fox.node`, `fox.job`, `fox.key` (32 hex digits), `fox.amport`,
// `fox.aggregate` (on|off) from the boot arguments (hosted: FOX_ARGS).
// kInvalidArgument, logged with the argument's name, when one is malformed.
Result<Config> ConfigFromBootArgs();

// A peer list "ID@A.B.C.D[:PORT],..." (fox.peers): calls add(node, ip, port)
// for each (port: `default_port` when absent). kInvalidArgument naming the
// bad entry in `error` (if given), without calling add for any entry.
Result<void> ParsePeers(std::string_view text, uint16_t default_port, FunctionRef<void(NodeId, uint32_t, uint16_t)> add,
                        const char** error = nullptr);

// Starts the transport (once). Native: the network must be up (net::Start;
// the transport takes over the NIC's receive handler and hands lwIP what is
// not an AM frame); hosted: binds the UDP port on every address. Then adds
// the peers named by `fox.peers`, if any. kAlreadyExists if started already, kBusy if the
// port is taken, kUnsupported if the network is not up (native). Event context, any core.
Result<void> Start(const Config& config);
bool Started();
NodeId Self();

// Adds a peer at `ip` (host byte order, 10.0.0.1 = 0x0A000001) and `port`.
// kAlreadyExists (address updated), kInvalidArgument (ourselves). Event context.
Result<void> AddPeer(NodeId node, uint32_t ip, uint16_t port = kDefaultPort);

// Receives the messages sent to one Ebb id, in delivery context (above).
class Receiver {
 public:
  virtual ~Receiver() = default;
  virtual void OnMessage(NodeId from, HandlerId handler, const uint8_t* data, size_t length) = 0;
};
// One receiver per Ebb id (not 0), delivery context. kAlreadyExists,
// kOutOfRange (table full: kMaxReceivers ids, Listen's included).
// kInvalidArgument for id 0 or a null receiver. Any context but delivery;
// before or after Start.
inline constexpr size_t kMaxReceivers = 4096;
Result<void> Register(EbbId ebb, Receiver* receiver);

// A handler of messages as events (Listen). `data` is the handler's own
// copy, valid until it returns (across blocking too).
using Handler = Function<void(NodeId from, HandlerId handler, const uint8_t* data, size_t length)>;
// Messages for `ebb` on this node run `handler` as events on `core`, through
// that core's receive mailbox (see the top). kAlreadyExists, kOutOfRange
// (table full, or `core` not online), kInvalidArgument (id 0), kNoMemory
// (the core's first mailbox). Event context; before or after Start.
Result<void> Listen(EbbId ebb, int core, Handler handler);
// Removes the receiver or listener of `ebb`: no delivery starts after it
// returns (a listener's handler already running finishes). Event context.
void Unregister(EbbId ebb);

// Queues a message. kPeerDead: unknown or dead node; kNotFound: not started;
// kOutOfRange: too long; kBusy: full, retry (or SendWait). To this node:
// delivered at once, in delivery context. Any core, events or delivery
// context; never blocks.
Result<void> Send(NodeId node, EbbId ebb, HandlerId handler, const void* data, size_t length);
// Like Send, but a message that finds the peer full waits in the node's
// deferred buffer and goes out, in order, as the window opens; kBusy only
// when that buffer is full too. For delivery context (replies), where
// waiting is impossible; never blocks. Until deferred messages to a peer
// are out, Send to it is kBusy (SendWait waits) so nothing overtakes them.
Result<void> SendOrDefer(NodeId node, EbbId ebb, HandlerId handler, const void* data, size_t length);
// Like Send, but blocks the calling event while the peer is full. Event
// context only (not delivery context).
Result<void> SendWait(NodeId node, EbbId ebb, HandlerId handler, const void* data, size_t length);
// Sends aggregated messages now instead of after the flush delay. Any core.
void Flush(NodeId node = net::AmEndpoint::kAnyPeer);
// Flushes, then waits (at most `max_ms`) until every message sent to a live
// peer is acknowledged; true if all were. What a program does before it
// ends, so that its last messages (a result, a goodbye, the death notices
// it owes the job) are not lost with it when a frame needs retransmitting:
// Start registers it to run at exit (std::exit, fox::Exit, main returning)
// with kLingerAtExitMs. Event context (the wait suspends only the caller).
constexpr uint64_t kLingerAtExitMs = 2000;
bool Linger(uint64_t max_ms);

// Calls `callback(node, state)` as an event on `core` (-1: the calling
// core) whenever a peer becomes suspected, alive again, or dead. Returns an
// id for StopPeerState. Event context.
uint64_t OnPeerState(Function<void(NodeId, PeerState)> callback, int core = -1);
// No call of that callback starts after this returns, when called on the
// callback's core (from another core, one already posted may still run).
// Event context.
void StopPeerState(uint64_t subscription);
PeerState State(NodeId node);
// Milliseconds since the peer last gave a sign of life (any authenticated
// frame); -1: never heard from, or unknown.
int64_t SilentMs(NodeId node);
// How long a member may be silent before it is suspected, then declared
// dead unless it refutes (fox.suspect_ms): no node declares this one dead
// sooner after it last heard from it. 0 before Start.
uint64_t SuspicionMs();
// Every peer of this node (alive or not), in no particular order. Event context.
std::vector<NodeId> Peers();
// The frontend saw the node die. Event context.
void DeclareDead(NodeId node);
// DeclareDead, and tell every other node of the job, which declare it dead
// at once instead of waiting for their detectors (fail-stop: a notice is
// believed). For the frontend when a node's QEMU exits. Event context.
void NotifyDead(NodeId node);

struct Stats {
  net::EndpointCounters endpoint;
  net::ChannelCounters channels;  // summed over every peer's reliable channel
  uint64_t local_messages;        // sent to this node
  uint64_t no_receiver;           // messages for an Ebb id without a receiver
  uint64_t no_listener;           // mailbox messages whose listener left before they ran
  uint64_t backpressure_drops;    // frames refused: a mailbox lacked room
  uint64_t mailbox_overflows;     // messages a mailbox had no room for: must stay 0
  uint64_t tx_datagrams, tx_bytes, tx_failures;
  uint64_t rx_datagrams, rx_bytes;
  uint64_t rx_not_am;                  // native: frames handed on to lwIP
  uint64_t arp_requests, arp_misses;   // native: ARP requests sent; frames held back for want of a MAC
  uint64_t arp_replies, arp_learned;   // native: answers to peers' announcements; peers' MACs learned
  nic::Stats nic;                      // native: the NIC's own counters (zero hosted)
  net::MembershipCounters membership;  // failure detection ("fd.*")
};
Stats GetStats();
// Every counter of `stats` with its name ("messages_sent", "dropped.duplicate",
// "nic.rx_packets", ...), from one table: what logs, `fox status` and
// benchmarks print.
void ForEachCounter(const Stats& stats, FunctionRef<void(const char* name, uint64_t value)> fn);
// The counters that are not zero, on a few log lines.
void LogStats();

}  // namespace fox::am
