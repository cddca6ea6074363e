// IPv4 networking on compute nodes: the interface (DHCP or static), ping,
// UDP and TCP, over lwIP (net/lwip/README.md). Native nodes only.
//
// Execution model. lwIP runs on kernel core 0, in events of its loop; it
// never runs at interrupt level. Every call here may be made from any core,
// from event context: calls from another core are forwarded to core 0 with
// event::SpawnRemote. Nothing here blocks; results come back as futures
// (Future::Then, or Future::Block inside an event). Callbacks (receive,
// accept, close) run as ordinary events on the socket's *home core*, the
// core that called Bind/Connect/Listen (accepted sockets: the listener's),
// in the order lwIP produced them — never inside lwIP's own callbacks, so
// they may call anything, block included. Errors are values (Status).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fox/function.h"
#include "fox/future.h"
#include "fox/nic.h"
#include "fox/net/ipv4.h"
#include "fox/result.h"

namespace fox::net {

// ---- addresses ----

struct Endpoint {
  Ipv4 ip;
  uint16_t port = 0;
  std::string ToString() const;  // "10.0.2.15:7"
};

// ---- status ----

// The outcome of a network operation (lwIP's err_t, in fox's words).
enum class Status : uint8_t {
  kOk = 0,
  kNotStarted,       // net::Start has not brought the interface up
  kInvalidArgument,  // bad address, port, size
  kInUse,            // port taken, already started, already connected
  kNoMemory,         // lwIP's pools or heap are exhausted
  kNoRoute,          // no interface or gateway for the destination
  kTimedOut,         // DHCP found no server in time, ping got no reply
  kNotConnected,     // the socket is closed or never connected
  kClosed,           // the peer closed the connection (orderly FIN)
  kReset,            // the peer reset the connection (or refused it)
  kAborted,          // lwIP aborted it (retransmissions exhausted, no memory)
};
const char* StatusName(Status status);

// ---- the interface ----

struct Config {
  bool dhcp = true;  // false: the static address below
  Ipv4 address;      // static address and netmask
  Ipv4 netmask;
  // Static: the gateway (any: none). DHCP: used when the server names no
  // router (QEMU's restricted user network offers none).
  Ipv4 gateway;
  int nic = 0;  // nic::Get(nic)
  // How long Start's future waits for a DHCP lease before it is ready with
  // kTimedOut (lwIP's DHCP client keeps trying after that).
  uint64_t dhcp_timeout_ms = 10000;
  // Installs lwIP's receive handler on the NIC. Off when another receive
  // path (the active-message fast path) owns the NIC and hands lwIP the
  // frames it does not consume through DeliverFrameFromInterrupt.
  bool install_rx_handler = true;
};

// The configuration the boot arguments ask for: static when `fox.ip=A.B.C.D/NN`
// is given (with optional `fox.gw=A.B.C.D`), DHCP otherwise (`fox.gw` then
// names the gateway to use if the DHCP server offers none). kInvalidArgument
// (logged, naming the argument) when one is malformed. Any context but
// interrupts.
Result<Config> ConfigFromBootArgs();

struct InterfaceInfo {
  Status status = Status::kNotStarted;  // kOk once the interface has an address
  Ipv4 address, netmask, gateway;
  nic::MacAddress mac{};
  bool dhcp = false;
  Ipv4 dhcp_server;                // the server that leased the address (DHCP)
  bool gateway_from_dhcp = false;  // false: static, or Config::gateway as fallback
};

// Brings the interface up (once per node): initialises lwIP on core 0, adds
// the NIC, starts DHCP or sets the static address. The future is ready when
// the interface has an address (status kOk), or with kTimedOut (DHCP),
// kInUse (started already with another addressing, or not up yet),
// kNoRoute (no such NIC), kInvalidArgument (static without an address).
// Started already with the same addressing (a pool node's agent started it
// for the app that took its job): ready at once with the interface as it is.
// Any core, event context.
Future<InterfaceInfo> Start(const Config& config);
// A program's network from its boot arguments: ConfigFromBootArgs, then
// Start, waited for. 0 once the interface is up (*info, when given, says
// how); else the exit status for main: 2 for a malformed or incomplete
// address (logged, naming the argument), 1 when the interface did not come
// up (printed as "WHO: network: STATUS"). Event context: it blocks.
int StartFromBootArgs(const char* who, InterfaceInfo* info = nullptr);
// The interface's current state. Any core, any context but interrupts.
InterfaceInfo Info();

// Counters (STYLE.md §12): the port's own and lwIP's. Any core.
struct Stats {
  uint64_t rx_frames, rx_bytes;  // frames taken from the NIC into the ring
  uint64_t rx_ring_overflows;    // frames dropped: the ring was full
  uint64_t rx_too_long;          // frames dropped: longer than a ring slot
  uint64_t rx_no_pbuf;           // frames dropped: lwIP had no pbuf
  uint64_t rx_wakeups;           // events posted from the interrupt path
  uint64_t tx_frames, tx_bytes;
  uint64_t tx_busy;                                                // frames dropped: the NIC's ring was full
  uint64_t tx_errors;                                              // frames the NIC refused otherwise
  uint64_t ip_drops, icmp_rx, icmp_tx, udp_rx, udp_tx, udp_drops;  // lwIP's
  uint64_t tcp_rx, tcp_tx, tcp_drops, tcp_retransmits;             // lwIP's
  uint64_t mem_errors;                                             // lwIP heap and pool allocation failures
};
Stats GetStats();

// For a receive path that owns the NIC (install_rx_handler = false): hands
// lwIP one Ethernet frame. INTERRUPT LEVEL on kernel core 0 (or an event
// there): copies the frame into a preallocated ring and wakes the loop; no
// allocation, never blocks. One producer at a time. Frames arriving before
// Start are dropped (counted as ring overflows).
void DeliverFrameFromInterrupt(const uint8_t* frame, size_t length);

// ---- received data ----

// Bytes received (a chain of lwIP buffers, not copied). Move-only. Any
// core may read it; destroying it returns the buffers to lwIP on core 0.
class Packet {
 public:
  Packet() = default;
  explicit Packet(void* pbuf) : pbuf_(pbuf) {}  // takes a reference (net/lwip)
  Packet(Packet&& o) noexcept : pbuf_(o.pbuf_) { o.pbuf_ = nullptr; }
  Packet& operator=(Packet&& o) noexcept;
  Packet(const Packet&) = delete;
  Packet& operator=(const Packet&) = delete;
  ~Packet() { Release(); }

  size_t size() const;
  bool empty() const { return size() == 0; }
  // Copies up to `length` bytes from `offset` into `out`; returns how many.
  size_t CopyTo(void* out, size_t length, size_t offset = 0) const;
  std::string ToString() const;  // all of it
  // Calls fn(data, length) for each contiguous piece, in order.
  void ForEachChunk(Function<void(const uint8_t*, size_t)> fn) const;

 private:
  void Release();
  void* pbuf_ = nullptr;
};

// ---- ping ----

struct PingReply {
  Status status = Status::kTimedOut;  // kOk: a matching echo reply came back
  uint64_t rtt_ns = 0;
};
// Sends one ICMP echo request (lwIP raw API) and waits up to `timeout_ms`
// for the reply. Any core.
Future<PingReply> Ping(Ipv4 to, uint64_t timeout_ms = 1000);

// ---- UDP ----

class UdpSocket {
 public:
  using ReceiveHandler = Function<void(Packet data, Endpoint from)>;

  // Binds `port` (0: an ephemeral one) on every local address. Each datagram
  // received runs `on_receive` as an event on the calling core. Ready with a
  // socket whose status() says whether the bind worked (kInUse, kNoMemory,
  // kNotStarted).
  static Future<UdpSocket> Bind(uint16_t port, ReceiveHandler on_receive);

  UdpSocket() = default;
  Status status() const;
  uint16_t port() const;  // the bound port (the ephemeral one if 0 was asked)

  // Sends one datagram of `length` bytes (copied). On core 0 the status is
  // lwIP's (kNoRoute: no ARP entry yet is not an error, lwIP queues);
  // from other cores the datagram is forwarded and kOk means accepted for
  // sending (later failures are counted, Stats::udp_drops).
  Status SendTo(Endpoint to, const void* data, size_t length);
  // Unbinds. No receive callback runs after Close's own event on the home
  // core. Any core; idempotent. A socket is not closed by dropping handles.
  void Close();

  // Internal (net/lwip): a handle to a socket's shared state.
  struct State;
  explicit UdpSocket(std::shared_ptr<State> s) : state_(std::move(s)) {}

 private:
  std::shared_ptr<State> state_;
};

// ---- TCP ----

class TcpSocket {
 public:
  using ReceiveHandler = Function<void(Packet data)>;
  using CloseHandler = Function<void(Status why)>;

  // Connects to `to`. Ready with the socket once connected (status() kOk)
  // or failed (kReset: refused; kAborted: no answer; kNoRoute). Any core;
  // the calling core becomes the socket's home.
  static Future<TcpSocket> Connect(Endpoint to);

  TcpSocket() = default;
  Status status() const;  // kOk while connected
  Endpoint local() const;
  Endpoint remote() const;

  // Data received runs `handler` as an event on the home core. Data that
  // arrived before a handler was set is held (and the receive window not
  // reopened) and delivered once it is. Any core.
  void OnReceive(ReceiveHandler handler);
  // Runs once when the connection ends other than by our Close(): kClosed
  // (the peer finished sending; after all its data), kReset, kAborted. Set
  // it after the end and it runs at once (as an event). Any core.
  void OnClose(CloseHandler handler);

  // Queues `length` bytes (copied) for sending. The future is ready (kOk)
  // once all of them are in lwIP's send buffer, so a sender that waits for
  // each Send before the next is paced by the network (backpressure);
  // kNotConnected / kReset / kAborted if the connection ends first. Any core.
  Future<Status> Send(const void* data, size_t length);
  Future<Status> Send(std::string_view text) { return Send(text.data(), text.size()); }
  // Bytes accepted by Send and not yet handed to lwIP. Any core.
  size_t Queued() const;

  // Closes after everything queued has been handed to lwIP (which delivers
  // it before its FIN). No receive or close callback runs after Close's own
  // event on the home core. Any core; idempotent.
  void Close();
  // Resets the connection now; queued sends fail with kAborted.
  void Abort();

  // Internal (net/lwip): a handle to a socket's shared state.
  struct State;
  explicit TcpSocket(std::shared_ptr<State> s) : state_(std::move(s)) {}

 private:
  std::shared_ptr<State> state_;
};

class TcpListener {
 public:
  using AcceptHandler = Function<void(TcpSocket connection)>;

  // Listens on `port` (every local address). Each accepted connection gets
  // a home core: the calling core, or with `homes` each of those cores in
  // turn (a server that spreads its connections over the node's cores);
  // `on_accept` runs as an event on the new socket's home. With several
  // homes it runs on several cores at once, so it must be safe to call
  // concurrently, and it is destroyed on whichever of them ran it last
  // after Close. Ready with a listener whose status() says whether it
  // worked (kInUse, kNoMemory, kNotStarted; kInvalidArgument for a home
  // that is no online core). Any core.
  static Future<TcpListener> Listen(uint16_t port, AcceptHandler on_accept, std::vector<int> homes = {});

  TcpListener() = default;
  Status status() const;
  uint16_t port() const;
  // Stops accepting (connections already accepted stay). Any core.
  void Close();

  // Internal (net/lwip): a handle to a socket's shared state.
  struct State;
  explicit TcpListener(std::shared_ptr<State> s) : state_(std::move(s)) {}

 private:
  std::shared_ptr<State> state_;
};

}  // namespace fox::net
