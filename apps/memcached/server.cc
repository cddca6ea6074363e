// The memcached app: `fox run memcached` (issue 13). Every node of the job
// serves the memcached protocol, text and binary (fox/memcached/session.h),
// on TCP port 11211 through lwIP; stock clients (memccapable, memcslap,
// pymemcache) talk to it as to memcached. By default the store is the
// job's Dht (fox/ebb/dht.h, DhtStore): one replicated store across the
// nodes, so a key set through any node is read through any other and
// survives the death of fewer than r nodes. Place 0, the frontend's Linux
// process, is a member of the Dht too (it holds its share), prints where
// the nodes serve and waits (`fox run --timeout`, or Ctrl-C, ends the job).
//
//   arguments: port=P (default 11211)  mem=MIB (bytes each node stores, default 32)
//              store=dht|local (default dht; local: each node its own LocalStore)
//              cores=C (a node serves its connections on its first C cores,
//                       0: on all of them; default 1; store=local: 1)
//              r=R (the Dht's replication factor, 1..4, default 2)
//              seconds=S (place 0: end the job after S seconds; default never)
//
// A node serves its connections on the core that listens (core 0, where
// lwIP runs), or with cores=C spreads them over C cores (the listener gives
// each accepted connection the next core in turn). Spreading moves only
// the sessions and the Dht calls: every request still passes through lwIP
// on core 0 and then crosses between the cores twice (received data to the
// session's core, its answer back), which costs more than it saves while
// the network stack is one core's (make bench B=dht, a node of 2 cores
// under TCG: 0.80 x the gets and 0.76 x the sets of serving on one core;
// with 16 connections 1.1-1.2 x). Either way a connection is served by one
// event at a time on its core, one request at a time (Session::Run; a Dht
// call blocks that event only, never the network's callbacks), and counts
// into its core's counters (stats add them up). The Dht serves any core
// (fox/ebb/dht.h); a LocalStore is one core's, so store=local serves on the
// listener's core only. A client that sends faster than it reads
// stops being read once 1 MiB of answers waits for the network (TCP flow
// control then holds it back); one that vanishes is closed by lwIP.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fox/boot_args.h"
#include "fox/core.h"
#include "fox/ebb/dht.h"
#include "fox/future.h"
#include "fox/net/am.h"
#include "fox/timer.h"
#include "fox/event.h"
#include "fox/memcached/dht_store.h"
#include "fox/memcached/local_store.h"
#include "fox/memcached/session.h"
#ifdef FOX_NATIVE
#include "fox/net/ip.h"
#else
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <thread>
#endif

namespace {

struct Args {
  unsigned port = 11211;
  unsigned mem_mib = 32;
  unsigned seconds = 0;
  bool dht = true;
  unsigned replication = 2;
  unsigned gateway = 0;  // place 0's port on 127.0.0.1 (0: one the kernel picks)
  unsigned cores = 1;    // cores a node serves connections on (0: all)
};

// "key=value" words; false (with a message) on anything else.
bool ParseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    std::string_view w(argv[i]);
    size_t eq = w.find('=');
    std::string key(w.substr(0, eq == std::string_view::npos ? 0 : eq));
    char* end = nullptr;
    unsigned long v = eq == std::string_view::npos ? 0 : std::strtoul(argv[i] + eq + 1, &end, 10);
    bool number = eq != std::string_view::npos && end != argv[i] + eq + 1 && *end == '\0';
    if (key == "store" && (w.substr(eq + 1) == "dht" || w.substr(eq + 1) == "local")) {
      a->dht = w.substr(eq + 1) == "dht";
    } else if (key == "r" && number && v >= 1 && v <= 4) {
      a->replication = unsigned(v);
    } else if (key == "gateway" && number && v <= 65535) {
      a->gateway = unsigned(v);
    } else if (key == "port" && number && v >= 1 && v <= 65535) {
      a->port = unsigned(v);
    } else if (key == "mem" && number && v >= 1 && v <= 4096) {
      a->mem_mib = unsigned(v);
    } else if (key == "seconds" && number && v <= 7 * 24 * 3600) {
      a->seconds = unsigned(v);
    } else if (key == "cores" && number && v <= 256) {
      a->cores = unsigned(v);
    } else {
      std::printf(
          "memcached: bad argument '%s' (expected port=1..65535, mem=1..4096 (MiB), store=dht|local, r=1..4, "
          "cores=0..256, gateway=0..65535 or seconds=0..604800)\n",
          argv[i]);
      return false;
    }
  }
  return true;
}

// The Dht on this node, every node of the job a member (place 0 too), after
// am::Start. False (with a message) if it cannot start.
// A node the frontend adds to the running job (fox add --into-job:
// fox.joining=1) joins the Dht instead (its data rebalances onto it; place
// 0, a member, tells it the others).
bool StartDht(const Args& args, fox::NodeId self) {
  fox::ebb::RingConfig ring;
  ring.replication = args.replication;
  const char* joining = fox::BootArg("fox.joining");
  if (joining != nullptr && std::string(joining) == "1") {
    std::printf("memcached: node %u joins the running job's Dht\n", self);
    std::fflush(stdout);
    if (auto r = fox::ebb::Dht::Get()->Join(ring, {0}, 300'000, size_t(args.mem_mib) << 20); !r.ok()) {
      std::printf("memcached: node %u: cannot join the Dht: %s\n", self, fox::ErrorName(r.error()));
      return false;
    }
    return true;
  }
  if (auto r = fox::ebb::Dht::Get()->Start(ring, {}, size_t(args.mem_mib) << 20); !r.ok()) {
    std::printf("memcached: node %u: cannot start the Dht: %s\n", self, fox::ErrorName(r.error()));
    return false;
  }
  return true;
}

#ifdef FOX_NATIVE
using fox::memcached::CoreCounters;
using fox::memcached::DhtStore;
using fox::memcached::LocalStore;
using fox::memcached::Session;

constexpr size_t kMaxQueuedBytes = 1 << 20;  // answers waiting for the network, per connection

struct Server {
  std::unique_ptr<fox::memcached::Store> store;
  std::unique_ptr<CoreCounters> counters;  // one per serving core (0 .. serving - 1)

  // A session on the calling core.
  Session::Options OptionsHere() {
    Session::Options options;
    options.counters = counters->Of(fox::core::Current());
    options.all_cores = counters.get();
    return options;
  }
};
Server* g_server = nullptr;

// Connections live on their socket's home core (its handlers, the events
// that serve it, the Then of its sends all run there).
struct Connection {
  explicit Connection(fox::net::TcpSocket s) : socket(std::move(s)), session(g_server->OptionsHere()) {}
  fox::net::TcpSocket socket;
  Session session;
  std::string unfed;  // received, not yet taken by the session (it takes one request's worth)
  bool peer_closed = false;
  bool waiting = false;  // for the network to take our answers
  bool running = false;  // an event is in Serve (one at a time)
  bool closed = false;
};

void Close(const std::shared_ptr<Connection>& c) {
  if (c->closed) return;
  c->closed = true;
  c->socket.Close();
}

void Serve(const std::shared_ptr<Connection>& c);

// Serves the connection from an event of its own, unless one does already
// (it sees what arrived meanwhile). Network callbacks call this: they must
// not block, and a Dht call blocks.
void Kick(const std::shared_ptr<Connection>& c) {
  if (c->running || c->closed) return;
  c->running = true;
  fox::event::Spawn([c] {
    Serve(c);
    c->running = false;
  });
}

// Moves bytes between the socket and the session until neither can go on.
// May block (the store's calls).
void Serve(const std::shared_ptr<Connection>& c) {
  while (!c->closed && !c->waiting) {
    bool progress = false;
    if (!c->unfed.empty()) {
      size_t n = c->session.Feed(c->unfed.data(), c->unfed.size());
      c->unfed.erase(0, n);
      progress = n > 0;
    }
    c->session.Run(*g_server->store, std::time(nullptr));
    std::string_view out = c->session.Output();
    if (!out.empty()) {
      auto sent = c->socket.Send(out.data(), out.size());
      c->session.Consume(out.size());
      progress = true;
      if (c->socket.Queued() > kMaxQueuedBytes) {
        c->waiting = true;
        (void)sent.Then([c](fox::Future<fox::net::Status>) {
          c->waiting = false;
          Kick(c);
        });
        return;
      }
    }
    if (c->session.closing() || (c->peer_closed && c->unfed.empty())) {
      Close(c);
      return;
    }
    // Bytes that came while the store blocked (quiet and noreply requests
    // answer nothing, so no output says so) are taken before this event
    // ends: nothing else would Kick for them.
    if (!progress && (c->unfed.empty() || c->session.InputSpace() == 0)) return;
  }
}

int ServeNode(const Args& args, const fox::am::Config& config) {
  fox::NodeId self = config.self;
  fox::net::InterfaceInfo info;
  if (int status = fox::net::StartFromBootArgs("memcached", &info); status != 0) return status;
  if (args.dht) (void)fox::ebb::Dht::Get()->stats();  // constructs it here, before the transport starts
  if (auto r = fox::am::Start(config); !r.ok()) {     // for the Dht, and the job's membership: place 0's end
    std::printf("memcached: node %u: cannot start the transport: %s\n", self, fox::ErrorName(r.error()));
    return 1;
  }
  g_server = new Server;
  if (args.dht) {
    if (!StartDht(args, self)) return 1;
    g_server->store = std::make_unique<DhtStore>(size_t(args.mem_mib) << 20);
  } else {
    LocalStore::Options so;
    so.max_bytes = size_t(args.mem_mib) << 20;
    g_server->store = std::make_unique<LocalStore>(so);
  }
  // The cores that serve connections: the first `cores` (0: all); only
  // core 0 for a LocalStore. Each counts into its own counters.
  int online = fox::core::Online();
  int serving = !args.dht ? 1 : args.cores == 0 ? online : std::min(int(args.cores), online);
  g_server->counters = std::make_unique<CoreCounters>(serving, std::time(nullptr));
  std::vector<int> homes;
  for (int i = 0; i < serving; ++i) homes.push_back(i);
  auto listener = fox::net::TcpListener::Listen(
                      uint16_t(args.port),
                      [](fox::net::TcpSocket socket) {
                        auto c = std::make_shared<Connection>(std::move(socket));
                        c->socket.OnReceive([c](fox::net::Packet data) {
                          c->unfed += data.ToString();
                          Kick(c);
                        });
                        c->socket.OnClose([c](fox::net::Status) {
                          c->peer_closed = true;
                          Kick(c);  // answers what came before the FIN, then closes
                        });
                      },
                      homes)
                      .Block();
  if (listener.status() != fox::net::Status::kOk) {
    std::printf("memcached: node %u: cannot listen on TCP port %u: %s\n", self, args.port,
                fox::net::StatusName(listener.status()));
    return 1;
  }
  std::printf("memcached: node %u serving on %s:%u (%s, %u MiB, connections on %d core%s)\n", self,
              info.address.ToString().c_str(), args.port, args.dht ? "the job's Dht" : "a store of its own",
              args.mem_mib, serving, serving == 1 ? "" : "s");
  std::fflush(stdout);
  // The job ends when place 0 does (its death is noticed by the membership
  // or told by the frontend).
  auto ended = std::make_shared<fox::Promise<int>>();
  auto future = ended->GetFuture();
  auto told = std::make_shared<bool>(false);
  fox::am::OnPeerState([ended, told](fox::NodeId node, fox::net::PeerState state) {
    if (node != 0 || state != fox::net::PeerState::kDead || *told) return;
    *told = true;
    std::printf("memcached: place 0 is gone: the job ends\n");
    ended->SetValue(0);
  });
  return future.Block();
}
#endif

#ifndef FOX_NATIVE
// The gateway: place 0 serves the memcached protocol on 127.0.0.1 from the
// same Dht, so that clients on the frontend reach the job's data without a
// route to the nodes (the rootless switch has none). One Linux thread per
// connection reads and writes the socket; the session's requests run in an
// event on core 0 (a Dht call blocks that event, not the thread's peers),
// and the thread waits for it. A client that sends faster than it reads is
// held back by its own socket (the thread writes before it reads again).
fox::memcached::DhtStore* g_gateway_store = nullptr;

void GatewayConnection(int fd) {
  using fox::memcached::Session;
  Session session;
  std::string unfed;
  char buffer[16384];
  bool peer_closed = false;
  for (;;) {
    std::promise<Session::Step> done;
    fox::event::SpawnRemote(0, [&] {
      Session::Step step;
      for (;;) {
        size_t taken = session.Feed(unfed.data(), unfed.size());
        unfed.erase(0, taken);
        step = session.Run(*g_gateway_store, std::time(nullptr));
        if (step != Session::Step::kNeedInput || taken == 0) break;
      }
      done.set_value(step);
    });
    Session::Step step = done.get_future().get();
    std::string_view out = session.Output();
    while (!out.empty()) {
      ssize_t n = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
      if (n <= 0) {
        ::close(fd);
        return;
      }
      session.Consume(size_t(n));
      out = session.Output();
    }
    if (session.closing() || (peer_closed && unfed.empty())) break;
    if (step == Session::Step::kDrainOutput) continue;         // sent: it parses on
    if (!unfed.empty() && session.InputSpace() > 0) continue;  // it took part: it has room again
    ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) {
      peer_closed = true;
      if (unfed.empty()) break;
      continue;
    }
    unfed.append(buffer, size_t(n));
  }
  ::close(fd);
}

// Listens on 127.0.0.1:port; returns the port, or 0 (with a message).
unsigned StartGateway(unsigned port, size_t max_bytes) {
  g_gateway_store = new fox::memcached::DhtStore(max_bytes);
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 64) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &length) != 0) {
    std::printf("memcached: place 0: cannot listen on 127.0.0.1:%u: %s\n", port, std::strerror(errno));
    if (fd >= 0) ::close(fd);
    return 0;
  }
  std::thread([fd] {
    for (;;) {
      int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) {
        if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE) continue;
        return;
      }
      int nodelay = 1;
      ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &nodelay, sizeof nodelay);
      std::thread(GatewayConnection, c).detach();
    }
  }).detach();
  return ntohs(a.sin_port);
}

// Place 0 (a Linux process on the frontend): says what serves, then waits.
int Coordinate(const Args& args, const fox::am::Config& config) {
  if (args.dht) (void)fox::ebb::Dht::Get()->stats();  // constructs it before the transport starts
  if (auto r = fox::am::Start(config); !r.ok()) {     // the nodes see it live, and its end
    std::printf("memcached: place 0: cannot start the transport: %s\n", fox::ErrorName(r.error()));
    return 1;
  }
  if (args.dht && !StartDht(args, config.self)) return 1;
  size_t nodes = 0;
  if (const char* peers = fox::BootArg("fox.peers")) {
    (void)fox::am::ParsePeers(peers, fox::am::kDefaultPort,
                              [&](fox::NodeId n, uint32_t, uint16_t) { nodes += n != 0; });
  }
  // (Its peers' addresses here are the frontend's relays, not the nodes':
  // each node prints its own.)
  std::string store = args.dht ? "one Dht over the job, r = " + std::to_string(args.replication)
                               : std::string("each node a store of its own");
  std::printf("memcached: place 0; %zu nodes serve the memcached protocol on TCP port %u (%s)\n", nodes, args.port,
              store.c_str());
  if (args.dht) {
    unsigned port = StartGateway(args.gateway, size_t(args.mem_mib) << 20);
    if (port == 0) return 1;
    std::printf("memcached: place 0 serves the same Dht to clients on this machine at 127.0.0.1:%u\n", port);
    std::printf("fox: endpoint memcached 127.0.0.1:%u\n", port);  // for fox status (boot/fox/job.py)
  }
  std::fflush(stdout);
  if (args.seconds != 0) {
    fox::timer::Sleep(uint64_t(args.seconds) * 1'000'000'000);
    std::printf("memcached: %u s are over: the job ends\n", args.seconds);
    return 0;
  }
  fox::Promise<int> never;  // fox run --timeout or Ctrl-C ends the job
  return never.GetFuture().Block();
}
#endif

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!ParseArgs(argc, argv, &args)) return 2;
  auto config = fox::am::ConfigFromBootArgs();
  if (!config.ok()) return 2;
#ifdef FOX_NATIVE
  return ServeNode(args, *config);  // every node serves
#else
  return Coordinate(args, *config);  // the Linux program is place 0
#endif
}
