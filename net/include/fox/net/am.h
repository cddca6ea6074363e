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
// Anything heavier goes through a Mailbox, which copies messages into
// preallocated memory and runs a handler as an event on a chosen core.
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
// allocated at Start) until the window opens, keeping per-pair order; a frame whose
// messages a Mailbox has no room for is dropped before it counts as
// received (kBackpressure), so the sender retransmits it later.
//
// Failure detection: heartbeats and a phi accrual detector per peer (see
// net/am_endpoint.h); OnPeerState callbacks run as events. A dead peer
// stays dead: Sends to it fail with kNotFound, its late frames are dropped.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "fox/function.h"
#include "fox/nic.h"
#include "fox/net/am_endpoint.h"
#include "fox/result.h"

namespace fox::am {

using net::FunctionRef;
using net::NodeId;
using net::PeerState;

inline constexpr uint16_t kDefaultPort = 7700;

struct Config {
  uint64_t job = 1;
  net::SipKey key{};
  bool key_given = false;        // false: the development key derived from the job id
  NodeId self = 0;
  uint16_t port = kDefaultPort;  // UDP port, the same on every node of the job
  int core = 0;                  // transport core: timers, hosted socket (native: 0)
  net::EndpointConfig tuning;    // aggregation, windows, heartbeats, detector (job/key/self ignored)
};

// `fox.node`, `fox.job`, `fox.key` (32 hex digits), `fox.amport`,
// `fox.aggregate` (on|off) from the boot arguments (hosted: FOX_ARGS).
// kInvalidArgument, logged with the argument's name, when one is malformed.
Result<Config> ConfigFromBootArgs();

// A peer list "ID@A.B.C.D[:PORT],..." (fox.peers): calls add(node, ip, port)
// for each (port: `default_port` when absent). kInvalidArgument naming the
// bad entry in `error` (if given), without calling add for any entry.
Result<void> ParsePeers(std::string_view text, uint16_t default_port,
                        FunctionRef<void(NodeId, uint32_t, uint16_t)> add, const char** error = nullptr);

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
class Mailbox;
class Receiver {
 public:
  virtual ~Receiver() = default;
  virtual void OnMessage(NodeId from, uint16_t handler, const uint8_t* data, size_t length) = 0;
  virtual Mailbox* AsMailbox() { return nullptr; }
};
// One receiver per Ebb id (not 0). kAlreadyExists, kOutOfRange (table
// full: 1024 ids). Messages for an id without a receiver are counted and
// dropped. Any context but delivery.
Result<void> Register(uint32_t ebb, Receiver* receiver);
void Unregister(uint32_t ebb);

// A Receiver that runs `handler` as events on `core`, in arrival order, with
// a copy of each message held in a ring of `bytes` allocated up front.
// Register it like any Receiver. While it lacks room for a full receive
// window of frames, incoming frames are refused (the sender retransmits).
class Mailbox : public Receiver {
 public:
  using Handler = Function<void(NodeId from, uint16_t handler, const uint8_t* data, size_t length)>;
  Mailbox(int core, Handler handler, size_t bytes = 2 << 20);
  ~Mailbox() override;
  Mailbox(const Mailbox&) = delete;
  Mailbox& operator=(const Mailbox&) = delete;

  void OnMessage(NodeId from, uint16_t handler, const uint8_t* data, size_t length) override;
  Mailbox* AsMailbox() override { return this; }
  size_t Room() const;     // bytes free now
  uint64_t overflows() const { return overflows_; }  // messages lost: must stay 0

 private:
  void Drain();
  int core_;
  Handler handler_;
  uint8_t* ring_;
  size_t size_;
  alignas(64) std::atomic<uint64_t> head_{0};  // bytes produced (delivery context)
  alignas(64) std::atomic<uint64_t> tail_{0};  // bytes consumed (the core's events)
  uint64_t overflows_ = 0;
  void* trigger_;  // event::InterruptTrigger
};

// Queues a message. kNotFound: unknown or dead node (or not started);
// kOutOfRange: too long; kBusy: full, retry (or SendWait). To this node:
// delivered at once, in delivery context. Any core, events or delivery
// context; never blocks.
Result<void> Send(NodeId node, uint32_t ebb, uint16_t handler, const void* data, size_t length);
// Like Send, but a message that finds the peer full waits in the node's
// deferred buffer and goes out, in order, as the window opens; kBusy only
// when that buffer is full too. For delivery context (replies), where
// waiting is impossible; never blocks. Until deferred messages to a peer
// are out, Send to it is kBusy (SendWait waits) so nothing overtakes them.
Result<void> SendOrDefer(NodeId node, uint32_t ebb, uint16_t handler, const void* data, size_t length);
// Like Send, but blocks the calling event while the peer is full. Event
// context only (not delivery context).
Result<void> SendWait(NodeId node, uint32_t ebb, uint16_t handler, const void* data, size_t length);
// Sends aggregated messages now instead of after the flush delay. Any core.
void Flush(NodeId node = net::AmEndpoint::kAnyPeer);

// Calls `callback(node, state)` as an event on the calling core whenever a
// peer becomes suspected, alive again, or dead. Event context.
void OnPeerState(Function<void(NodeId, PeerState)> callback);
PeerState State(NodeId node);
double Phi(NodeId node);
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
  uint64_t local_messages;       // sent to this node
  uint64_t no_receiver;          // messages for an Ebb id without a receiver
  uint64_t backpressure_drops;   // frames refused: a mailbox lacked room
  uint64_t tx_datagrams, tx_bytes, tx_failures;
  uint64_t rx_datagrams, rx_bytes;
  uint64_t rx_not_am;            // native: frames handed on to lwIP
  uint64_t arp_requests, arp_misses;  // native: frames held back for want of a MAC
  nic::Stats nic;  // native: the NIC's own counters (zero hosted)
};
Stats GetStats();
// One line per counter that is not zero, for logs.
void LogStats();

}  // namespace fox::am
