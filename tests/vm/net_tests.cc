// In-VM tests of the lwIP port (see net_tests.h). Every wait is bounded:
// a test that would hang fails with a message naming what it waited for.
#include "net_tests.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fox/clock.h"
#include "fox/core.h"
#include "fox/event.h"
#include "fox/future.h"
#include "fox/net/ip.h"
#include "fox/timer.h"
#include "vmtest.h"

namespace vmtest {
namespace {

using fox::net::Endpoint;
using fox::net::Ipv4;
using fox::net::Status;

const Ipv4 kGateway = Ipv4::FromBytes(10, 0, 2, 2);
const Ipv4 kDhcpAddress = Ipv4::FromBytes(10, 0, 2, 15);

// Future::Block with a deadline: the test fails if `what` takes longer.
template <typename T>
T BlockFor(fox::Future<T> future, uint64_t ms, const char* what) {
  auto timer = fox::timer::Start(ms * 1000000, [what, ms] {
    std::printf("CHECK FAILED: no %s within %llu ms\n", what, (unsigned long long)ms);
    std::exit(1);
  });
  if constexpr (std::is_void_v<T>) {
    future.Block();
    fox::timer::Cancel(timer);
  } else {
    T value = future.Block();
    fox::timer::Cancel(timer);
    return value;
  }
}

void PrintStats() {
  auto s = fox::net::GetStats();
  std::printf(
      "net stats: rx %llu frames (%llu wake-ups, %llu ring overflows, %llu no pbuf), tx %llu frames "
      "(%llu busy, %llu errors); ip drops %llu; icmp rx %llu tx %llu; udp rx %llu tx %llu drops %llu; "
      "tcp rx %llu tx %llu drops %llu retransmits %llu; lwIP memory errors %llu\n",
      (unsigned long long)s.rx_frames, (unsigned long long)s.rx_wakeups, (unsigned long long)s.rx_ring_overflows,
      (unsigned long long)s.rx_no_pbuf, (unsigned long long)s.tx_frames, (unsigned long long)s.tx_busy,
      (unsigned long long)s.tx_errors, (unsigned long long)s.ip_drops, (unsigned long long)s.icmp_rx,
      (unsigned long long)s.icmp_tx, (unsigned long long)s.udp_rx, (unsigned long long)s.udp_tx,
      (unsigned long long)s.udp_drops, (unsigned long long)s.tcp_rx, (unsigned long long)s.tcp_tx,
      (unsigned long long)s.tcp_drops, (unsigned long long)s.tcp_retransmits, (unsigned long long)s.mem_errors);
}

fox::net::InterfaceInfo StartNet(const fox::net::Config& config) {
  uint64_t t0 = fox::clock::NowNs();
  auto info = BlockFor(fox::net::Start(config), 15000, "address for the interface");
  std::printf("net: interface up in %llu ms: %s %s/%s gateway %s (%s)\n",
              (unsigned long long)((fox::clock::NowNs() - t0) / 1000000), info.dhcp ? "DHCP" : "static",
              info.address.ToString().c_str(), info.netmask.ToString().c_str(), info.gateway.ToString().c_str(),
              fox::net::StatusName(info.status));
  CHECK(info.status == Status::kOk);
  return info;
}

// DHCP; QEMU's restricted network offers no router, so the gateway it
// would name is given as the fallback.
fox::net::InterfaceInfo StartDhcp() {
  fox::net::Config config;
  config.dhcp = true;
  config.gateway = kGateway;
  return StartNet(config);
}

bool PingOk(Ipv4 to, const char* name, uint64_t timeout_ms = 2000) {
  auto reply = BlockFor(fox::net::Ping(to, timeout_ms), timeout_ms + 2000, "ping result");
  std::printf("ping %s (%s): %s, %llu us\n", to.ToString().c_str(), name, fox::net::StatusName(reply.status),
              (unsigned long long)(reply.rtt_ns / 1000));
  return reply.status == Status::kOk;
}

// Pings with a few tries: the first may race ARP under a slow emulator.
bool PingWithRetries(Ipv4 to, const char* name) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (PingOk(to, name)) return true;
  }
  return false;
}

std::vector<uint8_t> Pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    v[i] = uint8_t(x >> 16);
  }
  return v;
}

int OtherCore() { return fox::core::Online() > 1 ? 1 : 0; }

void SleepMs(uint64_t ms) {
  auto p = std::make_shared<fox::Promise<void>>();
  auto f = p->GetFuture();
  fox::timer::Start(ms * 1000000, [p] { p->SetValue(); });
  f.Block();
}

}  // namespace

int NetDhcp(int, char**) {
  auto info = StartDhcp();
  std::printf("dhcp: lease from %s, gateway %s %s\n", info.dhcp_server.ToString().c_str(),
              info.gateway.ToString().c_str(), info.gateway_from_dhcp ? "offered" : "not offered (fallback)");
  CHECK(info.dhcp);
  CHECK(info.address == kDhcpAddress);
  CHECK(info.dhcp_server == kGateway);
  CHECK(info.gateway == kGateway);
  CHECK(info.netmask == Ipv4::Netmask(24));
  CHECK(fox::net::Info().address == kDhcpAddress);
  // A second Start with the same addressing (DHCP) is the interface as it is
  // (a pool node's app after its agent); with another it is refused, not a
  // second interface.
  fox::net::Config again;
  auto same = BlockFor(fox::net::Start(again), 2000, "second Start");
  CHECK(same.status == Status::kOk && same.address == kDhcpAddress);
  fox::net::Config other;
  other.dhcp = false;
  other.address = Ipv4::FromBytes(10, 0, 2, 99);
  other.netmask = Ipv4::Netmask(24);
  CHECK(BlockFor(fox::net::Start(other), 2000, "Start with another address").status == Status::kInUse);
  std::printf("dhcp: a second Start: the same interface; with a static address: refused\n");
  PrintStats();
  auto s = fox::net::GetStats();
  CHECK(s.rx_frames >= 2 && s.tx_frames >= 2 && s.rx_ring_overflows == 0);
  // With the interface up and nothing to do, core 0 sleeps: lwIP's own
  // timers (DHCP 0.5 s, ARP 1 s, ...) are its only wake-ups.
  uint64_t irq0 = fox::core::InterruptCount(0), sleeps0 = fox::event::GetStats(0).sleeps;
  SleepMs(1000);
  uint64_t irqs = fox::core::InterruptCount(0) - irq0, sleeps = fox::event::GetStats(0).sleeps - sleeps0;
  std::printf("dhcp: idle second on core 0: %llu interrupts, %llu sleeps\n", (unsigned long long)irqs,
              (unsigned long long)sleeps);
  CHECK(sleeps >= 1 && irqs < 50);
  return 0;
}

int NetPing(int, char**) {
  auto info = StartDhcp();
  CHECK(PingWithRetries(kGateway, "gateway"));
  CHECK(PingOk(info.address, "this node, answered by lwIP"));
  // Nobody has this address: ARP goes unanswered and the ping times out.
  auto reply = BlockFor(fox::net::Ping(Ipv4::FromBytes(10, 0, 2, 99), 500), 3000, "ping timeout");
  std::printf("ping 10.0.2.99 (nobody): %s\n", fox::net::StatusName(reply.status));
  CHECK(reply.status == Status::kTimedOut);
  // From an application core, forwarded to the stack core.
  bool remote_ok = RunOn(OtherCore(), [] { return PingOk(kGateway, "gateway, from another core"); });
  CHECK(remote_ok);
  PrintStats();
  auto s = fox::net::GetStats();
  // lwIP's ICMP answered the echo request to this node (our own requests
  // and the replies to them go through the raw pcb, not these counters).
  CHECK(s.icmp_rx >= 1 && s.icmp_tx >= 1);
  return 0;
}

int NetStatic(int argc, char** argv) {
  fox::net::Config config;
  if (argc >= 3) {
    int prefix = 0;
    CHECK(fox::net::ParseCidr(argv[1], &config.address, &prefix).ok());
    config.netmask = Ipv4::Netmask(prefix);
    auto gw = Ipv4::Parse(argv[2]);
    CHECK(gw.ok());
    config.gateway = *gw;
    config.dhcp = false;
  } else {
    auto from_boot = fox::net::ConfigFromBootArgs();
    CHECK(from_boot.ok());
    config = *from_boot;
    CHECK(!config.dhcp);
  }
  auto info = StartNet(config);
  CHECK(!info.dhcp);
  CHECK(info.address == config.address && info.gateway == config.gateway);
  CHECK(PingWithRetries(config.gateway, "gateway"));
  PrintStats();
  return 0;
}

int NetTcpLoopback(int argc, char** argv) {
  size_t total = argc > 1 ? size_t(std::atoi(argv[1])) : 256 * 1024;
  auto info = StartDhcp();
  constexpr uint16_t kPort = 7;

  // Echo server on core 0: each connection echoes what it receives.
  struct ServerStats {
    int accepted = 0;
    size_t echoed = 0;
    Status end = Status::kOk;
    bool ended = false;
  };
  auto server = std::make_shared<ServerStats>();
  auto listener = BlockFor(
      fox::net::TcpListener::Listen(kPort,
                                    [server](fox::net::TcpSocket conn) {
                                      ++server->accepted;
                                      conn.OnReceive([server, conn](fox::net::Packet data) mutable {
                                        server->echoed += data.size();
                                        std::string bytes = data.ToString();
                                        conn.Send(bytes);  // the future is not awaited: echo as fast as lwIP takes it
                                      });
                                      conn.OnClose([server, conn](Status why) mutable {
                                        server->end = why;
                                        server->ended = true;
                                        conn.Close();
                                      });
                                    }),
      2000, "listener");
  CHECK(listener.status() == Status::kOk);
  CHECK(listener.port() == kPort);
  // A second listener on the port is refused.
  auto dup = BlockFor(fox::net::TcpListener::Listen(kPort, [](fox::net::TcpSocket) {}), 2000, "second listener");
  std::printf("tcp: second listen on port %u: %s\n", kPort, fox::net::StatusName(dup.status()));
  CHECK(dup.status() == Status::kInUse);

  // The client, on another core: connect to our own address, send `total`
  // bytes in chunks (waiting on each Send: backpressure), read the echo.
  Endpoint to{info.address, kPort};
  uint64_t t0 = fox::clock::NowNs();
  size_t max_queued = 0;
  bool client_ok = RunOn(OtherCore(), [to, total, &max_queued] {
    auto conn = BlockFor(fox::net::TcpSocket::Connect(to), 5000, "TCP connection");
    std::printf("tcp: connected %s -> %s on core %d: %s\n", conn.local().ToString().c_str(),
                conn.remote().ToString().c_str(), fox::core::Current(), fox::net::StatusName(conn.status()));
    if (conn.status() != Status::kOk) return false;
    auto expected = Pattern(total, 7);
    auto received = std::make_shared<std::string>();
    auto done = std::make_shared<fox::Promise<void>>();
    auto done_future = done->GetFuture();
    conn.OnReceive([received, done, total](fox::net::Packet data) {
      received->append(data.ToString());
      if (received->size() == total) done->SetValue();
    });
    constexpr size_t kChunk = 16 * 1024;
    for (size_t off = 0; off < total; off += kChunk) {
      size_t n = std::min(kChunk, total - off);
      auto sent = conn.Send(expected.data() + off, n);
      if (conn.Queued() > max_queued) max_queued = conn.Queued();
      Status st = BlockFor(std::move(sent), 10000, "send accepted by lwIP");
      if (st != Status::kOk) {
        std::printf("tcp: send failed: %s\n", fox::net::StatusName(st));
        return false;
      }
    }
    BlockFor(std::move(done_future), 10000, "echoed data");
    bool same = received->size() == total && std::memcmp(received->data(), expected.data(), total) == 0;
    conn.Close();
    return same;
  });
  uint64_t ms = (fox::clock::NowNs() - t0) / 1000000;
  std::printf("tcp: %zu bytes echoed through lwIP loopback in %llu ms (client queue peak %zu bytes): %s\n", total,
              (unsigned long long)ms, max_queued, client_ok ? "verified" : "MISMATCH");
  CHECK(client_ok);
  // The server sees the client's FIN.
  for (int i = 0; i < 500 && !server->ended; ++i) SleepMs(10);
  std::printf("tcp: server accepted %d, echoed %zu bytes, end: %s\n", server->accepted, server->echoed,
              server->ended ? fox::net::StatusName(server->end) : "(none)");
  CHECK(server->accepted == 1 && server->echoed == total);
  CHECK(server->ended && server->end == Status::kClosed);

  // Nobody listens on port 9: the connection is refused (RST).
  auto refused = BlockFor(fox::net::TcpSocket::Connect(Endpoint{info.address, 9}), 5000, "refused connect");
  std::printf("tcp: connect to port 9: %s\n", fox::net::StatusName(refused.status()));
  CHECK(refused.status() == Status::kReset);
  listener.Close();
  PrintStats();
  return 0;
}

int NetTcpBackpressure(int, char**) {
  auto info = StartDhcp();
  constexpr uint16_t kPort = 8;
  constexpr size_t kTotal = 512 * 1024;  // far more than lwIP's send buffer + the peer's window
  constexpr size_t kChunk = 8 * 1024;
  // The server accepts but reads nothing until told to.
  auto accepted = std::make_shared<fox::Promise<fox::net::TcpSocket>>();
  auto accepted_future = accepted->GetFuture();
  auto listener =
      BlockFor(fox::net::TcpListener::Listen(kPort, [accepted](fox::net::TcpSocket conn) { accepted->SetValue(conn); }),
               2000, "listener");
  CHECK(listener.status() == Status::kOk);

  auto client = BlockFor(fox::net::TcpSocket::Connect(Endpoint{info.address, kPort}), 5000, "TCP connection");
  CHECK(client.status() == Status::kOk);
  auto server = BlockFor(std::move(accepted_future), 5000, "accept");
  auto payload = Pattern(kTotal, 3);
  std::vector<fox::Future<Status>> sends;
  for (size_t off = 0; off < kTotal; off += kChunk) sends.push_back(client.Send(payload.data() + off, kChunk));
  SleepMs(300);
  size_t done = 0;
  for (auto& f : sends) done += f.Ready();
  size_t queued = client.Queued();
  std::printf("tcp: reader idle: %zu of %zu sends accepted by lwIP, %zu bytes queued behind them\n", done, sends.size(),
              queued);
  CHECK(done < sends.size() && queued > 0);

  // The reader starts: everything flows, every send completes, data intact.
  auto received = std::make_shared<std::string>();
  auto all = std::make_shared<fox::Promise<void>>();
  auto all_future = all->GetFuture();
  server.OnReceive([received, all](fox::net::Packet data) {
    received->append(data.ToString());
    if (received->size() == kTotal) all->SetValue();
  });
  for (auto& f : sends) CHECK(BlockFor(std::move(f), 10000, "send accepted") == Status::kOk);
  BlockFor(std::move(all_future), 10000, "all data at the reader");
  CHECK(std::memcmp(received->data(), payload.data(), kTotal) == 0);
  std::printf("tcp: reader caught up: %zu bytes verified, queue %zu\n", received->size(), client.Queued());
  CHECK(client.Queued() == 0);
  // The client resets: the server hears of it.
  auto why = std::make_shared<fox::Promise<Status>>();
  auto why_future = why->GetFuture();
  server.OnClose([why](Status s) { why->SetValue(s); });
  client.Abort();
  Status end = BlockFor(std::move(why_future), 5000, "server's close notice");
  std::printf("tcp: after the client's abort the server sees: %s\n", fox::net::StatusName(end));
  CHECK(end == Status::kReset);
  CHECK(server.Send("late", 4).Block() != Status::kOk);
  server.Close();
  listener.Close();
  PrintStats();
  return 0;
}

// A listener that spreads its connections over cores (homes): the accept
// handler and each socket's handlers run on the socket's home, in turn.
int NetTcpHomes(int, char**) {
  auto info = StartDhcp();
  constexpr uint16_t kPort = 9;
  constexpr int kConnections = 4;
  const std::vector<int> homes = {OtherCore(), 0};
  auto bad = BlockFor(fox::net::TcpListener::Listen(kPort, [](fox::net::TcpSocket) {}, {fox::core::Online()}), 2000,
                      "listener with a bad home");
  std::printf("tcp: listener with home %d: %s\n", fox::core::Online(), fox::net::StatusName(bad.status()));
  CHECK(bad.status() == Status::kInvalidArgument);
  struct Seen {
    std::atomic<int> accepted_on[2] = {0, 0};
    std::atomic<int> wrong_core{0};
  };
  auto seen = std::make_shared<Seen>();
  auto listener = BlockFor(fox::net::TcpListener::Listen(
                               kPort,
                               [seen](fox::net::TcpSocket conn) {
                                 int home = fox::core::Current();
                                 ++seen->accepted_on[home == 0 ? 0 : 1];
                                 conn.OnReceive([seen, conn, home](fox::net::Packet data) mutable {
                                   if (fox::core::Current() != home) ++seen->wrong_core;
                                   std::string reply = "core" + std::to_string(home) + ":" + data.ToString();
                                   conn.Send(reply);
                                 });
                               },
                               homes),
                           2000, "listener");
  CHECK(listener.status() == Status::kOk);
  std::vector<fox::net::TcpSocket> clients;
  for (int i = 0; i < kConnections; ++i) {
    auto conn = BlockFor(fox::net::TcpSocket::Connect(Endpoint{info.address, kPort}), 5000, "TCP connection");
    CHECK(conn.status() == Status::kOk);
    auto answer = std::make_shared<fox::Promise<std::string>>();
    auto got = answer->GetFuture();
    auto text = std::make_shared<std::string>();
    conn.OnReceive([answer, text](fox::net::Packet data) {
      *text += data.ToString();
      if (text->find('!') != std::string::npos) answer->SetValue(*text);
    });
    std::string hello = "hello " + std::to_string(i) + "!";
    CHECK(BlockFor(conn.Send(hello), 5000, "send") == Status::kOk);
    std::string reply = BlockFor(std::move(got), 5000, "answer");
    std::string expected = "core" + std::to_string(homes[size_t(i) % homes.size()]) + ":" + hello;
    std::printf("tcp: connection %d answered '%s'\n", i, reply.c_str());
    CHECK(reply == expected);
    clients.push_back(conn);
  }
  std::printf("tcp: accepted on core 0: %d, on core %d: %d; handlers off their home: %d\n", seen->accepted_on[0].load(),
              OtherCore(), seen->accepted_on[1].load(), seen->wrong_core.load());
  CHECK(seen->wrong_core.load() == 0);
  CHECK(seen->accepted_on[0].load() + seen->accepted_on[1].load() == kConnections);
  for (auto& c : clients) c.Close();
  listener.Close();
  return 0;
}

int NetUdpLoopback(int argc, char** argv) {
  int count = argc > 1 ? std::atoi(argv[1]) : 100;
  auto info = StartDhcp();
  constexpr uint16_t kPort = 7;
  // Echo server on core 0.
  std::shared_ptr<fox::net::UdpSocket> echo = std::make_shared<fox::net::UdpSocket>();
  *echo = BlockFor(fox::net::UdpSocket::Bind(kPort,
                                             [echo](fox::net::Packet data, Endpoint from) {
                                               std::string bytes = data.ToString();
                                               echo->SendTo(from, bytes.data(), bytes.size());
                                             }),
                   2000, "UDP bind");
  CHECK(echo->status() == Status::kOk && echo->port() == kPort);
  auto dup = BlockFor(fox::net::UdpSocket::Bind(kPort, [](fox::net::Packet, Endpoint) {}), 2000, "second bind");
  CHECK(dup.status() == Status::kInUse);

  // Client on another core, ephemeral port: `count` datagrams of varying
  // size, each echo checked.
  Endpoint to{info.address, kPort};
  int matched = RunOn(OtherCore(), [to, count] {
    auto got = std::make_shared<std::vector<std::string>>();
    auto all = std::make_shared<fox::Promise<void>>();
    auto all_future = all->GetFuture();
    auto client = BlockFor(fox::net::UdpSocket::Bind(0,
                                                     [got, all, count](fox::net::Packet data, Endpoint from) {
                                                       got->push_back(data.ToString());
                                                       if (int(got->size()) == count) all->SetValue();
                                                     }),
                           2000, "client bind");
    if (client.status() != Status::kOk || client.port() == 0) return -1;
    std::printf("udp: client bound to port %u on core %d\n", client.port(), fox::core::Current());
    std::vector<std::string> sent;
    for (int i = 0; i < count; ++i) {
      auto bytes = Pattern(1 + (i * 37) % 1400, uint32_t(i));
      sent.emplace_back(bytes.begin(), bytes.end());
      if (client.SendTo(to, bytes.data(), bytes.size()) != Status::kOk) return -2;
    }
    BlockFor(std::move(all_future), 10000, "all UDP echoes");
    int same = 0;
    for (int i = 0; i < count; ++i) same += (*got)[i] == sent[i];  // in order: one path, FIFO queues
    client.Close();
    return same;
  });
  std::printf("udp: %d of %d datagrams echoed through lwIP loopback and verified\n", matched, count);
  CHECK(matched == count);
  echo->Close();
  PrintStats();
  return 0;
}

}  // namespace vmtest
