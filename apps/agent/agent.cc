// The pool agent: what an idle node of a `fox cluster up` pool runs between
// jobs (DESIGN.md "Frontend and jobs"). It brings the network up, tells the
// frontend it is here and waits for a job, which it takes without a reboot.
//
//   boot args: fox.app=agent fox.node=I fox.ip=... fox.key=K fox.job=1 fox.peers=0@IP
//
// The pool protocol (boot/fox/switch.py speaks the frontend's side). Every
// datagram is an active-message frame of job 1 (net/am_frame.h) authenticated
// with the cluster's key, between this node's UDP port 7700 and the
// frontend's (node 0, 10.77.0.1:7700), carrying records of Ebb kAgentEbb:
//   kAnnounce  node -> frontend, at start and every second: an 8-byte nonce
//              drawn at boot. The first authenticated one is the node's
//              join; a frame that fails the key gets the node refused.
//   kJob       frontend -> node: nonce (8), part (2), parts (2), then that
//              part of the job's boot arguments (kernel command-line syntax).
//              Only this boot's nonce is taken (an old job cannot be
//              replayed into a later boot); parts are sent again until the
//              node answers.
//   kTaken     node -> frontend: nonce. The node runs the job's app next,
//              with the job's arguments (fox::ReplaceBootArgs, then main
//              returns fox::kHandOver to the pool image's main), in this
//              boot: no reboot. When the app ends, the node exits with its
//              status and the frontend boots it into the pool again.
//   kRefused   node -> frontend: nonce, then why (text): the job changes an
//              argument applied at boot (fox.kcores, fox.stack...). The
//              frontend reboots the node into the job instead.
//   kExit      node -> frontend, when the job's app has ended (the pool
//              image's main calls fox_agent_job_ended): nonce, then the
//              status (4 bytes, little-endian), from another UDP port, sent
//              every 5 ms until answered, for at most 20 ms. fox run hears
//              of the status without waiting for QEMU to exit; a report that
//              is lost costs only that (QEMU's exit status still tells).
//   kExitSeen  frontend -> node, to the port kExit came from: the nonce.
// Hosted builds have no pool: there the agent only starts the transport.
#include <sys/random.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "fox/boot_args.h"
#include "fox/clock.h"
#include "fox/future.h"
#include "fox/net/am.h"
#include "fox/net/am_frame.h"
#include "fox/net/wire.h"
#include "fox/timer.h"
#ifdef FOX_NATIVE
#include "fox/net/ip.h"
#endif

namespace {

#ifdef FOX_NATIVE
constexpr fox::EbbId kAgentEbb{0x41474E54};  // "TNGA": the agent's records; no Ebb of a job
enum : uint16_t { kAnnounce = 1, kJob = 2, kTaken = 3, kRefused = 4, kExit = 5, kExitSeen = 6 };
constexpr uint16_t kPort = 7700;
constexpr uint64_t kAnnounceNs = 1'000'000'000;
constexpr uint64_t kExitResendNs = 5'000'000;
constexpr uint64_t kExitWaitNs = 20'000'000;
constexpr uint16_t kMaxParts = 16;

// Who this node is to the frontend in the pool protocol (job 1's frames).
struct PoolIdentity {
  fox::am::Config config;
  uint64_t nonce = 0;
  fox::net::Endpoint frontend;

  // One frame of job 1 from this node to the frontend with one record.
  void Send(fox::net::UdpSocket& socket, fox::HandlerId handler, const std::string& data) const {
    uint8_t frame[fox::net::kMaxFrameBytes];
    fox::net::FrameBuilder b(frame, sizeof frame, {config.job, config.self, 0});
    if (auto r = b.Add(kAgentEbb, handler, data.data(), std::min(data.size(), fox::net::kMaxMessageBytes));
        !r.ok() || !*r)
      return;
    size_t n = b.Finish(0, 0, 0, config.key, fox::net::kFlagAckNow);
    (void)socket.SendTo(frontend, frame, n);
  }
  std::string NonceBytes() const { return std::string(reinterpret_cast<const char*>(&nonce), 8); }
  // Whether a datagram from the frontend is a record `handler` for this boot (its first bytes
  // the nonce); `each` sees every such record's data.
  template <typename F>
  void Records(const uint8_t* data, size_t length, fox::HandlerId handler, F each) const {
    fox::net::DropReason why;
    auto view = fox::net::DecodeFrame(data, length, config.key, config.job, config.self, &why);
    if (!view.ok()) return;
    for (fox::net::AmMessage m : *view) {
      if (m.ebb != kAgentEbb || m.handler != handler || m.length < 8 || std::memcmp(m.data, &nonce, 8) != 0) continue;
      each(m);
    }
  }
};

PoolIdentity g_taken_by;  // set when a job is taken: its end is reported as this node's agent

// A UDP socket on `port` (0: any free one) whose datagrams `on_frame(data,
// length)` sees, copied out of their packets. Blocks until bound.
template <typename F>
fox::net::UdpSocket BindFrames(uint16_t port, F on_frame) {
  return fox::net::UdpSocket::Bind(port,
                                   [on_frame](fox::net::Packet p, fox::net::Endpoint) {
                                     uint8_t buf[fox::net::kMaxFrameBytes];
                                     on_frame(buf, p.CopyTo(buf, std::min(p.size(), sizeof buf)));
                                   })
      .Block();
}

struct Agent {
  PoolIdentity me;
  fox::net::UdpSocket socket;
  std::vector<std::string> parts;
  std::vector<bool> have;
  fox::Promise<std::string> job;
  bool taken = false;

  void Send(fox::HandlerId handler, const std::string& data) { me.Send(socket, handler, data); }

  // A datagram from the frontend: a kJob part of this boot's nonce.
  void OnDatagram(const uint8_t* data, size_t length) {
    if (taken) return;
    me.Records(data, length, kJob, [&](const fox::net::AmMessage& m) {
      if (taken || m.length < 12) return;
      uint16_t part = fox::net::wire::Load16(m.data + 8), count = fox::net::wire::Load16(m.data + 10);
      if (count == 0 || count > kMaxParts || part >= count) return;
      if (parts.size() != count) {
        parts.assign(count, "");
        have.assign(count, false);
      }
      parts[part].assign(reinterpret_cast<const char*>(m.data + 12), m.length - 12);
      have[part] = true;
      bool all = true;
      for (bool h : have) all = all && h;
      if (!all) return;
      std::string text;
      for (auto& p : parts) text += p;
      taken = true;
      job.SetValue(std::move(text));
    });
  }
};

// The end of a job this node's agent took: kExit until kExitSeen or kExitWaitNs.
struct ExitReport {
  fox::net::UdpSocket socket;
  std::atomic<bool> done{false};
  fox::Promise<bool> seen;
  void Finish(bool answered) {
    if (!done.exchange(true)) seen.SetValue(answered);
  }
};
#endif

}  // namespace

#ifdef FOX_NATIVE
// Called by the pool image's main (cmake/apps.cmake) when the app of a job this agent took has
// returned `status`, before the node exits with it.
extern "C" void fox_agent_job_ended(int status) {
  if (g_taken_by.nonce == 0) return;
  auto report = std::make_shared<ExitReport>();
  report->socket = BindFrames(0, [report](const uint8_t* data, size_t length) {
    g_taken_by.Records(data, length, kExitSeen, [&](const fox::net::AmMessage&) { report->Finish(true); });
  });
  if (report->socket.status() != fox::net::Status::kOk) return;
  std::string body = g_taken_by.NonceBytes();
  uint8_t s[4];
  fox::net::wire::Store32(s, uint32_t(status));
  body.append(reinterpret_cast<const char*>(s), 4);
  g_taken_by.Send(report->socket, kExit, body);
  auto resend = fox::timer::StartPeriodic(kExitResendNs, [report, body] {
    if (!report->done.load()) g_taken_by.Send(report->socket, kExit, body);
  });
  auto give_up = fox::timer::Start(kExitWaitNs, [report] { report->Finish(false); });
  bool answered = report->seen.GetFuture().Block();
  fox::timer::Cancel(resend);
  fox::timer::Cancel(give_up);
  report->socket.Close();
  if (!answered)
    std::printf("agent: the frontend did not answer the job's end in %u ms\n", unsigned(kExitWaitNs / 1'000'000));
}
#endif

int main(int, char**) {
  auto config = fox::am::ConfigFromBootArgs();
  if (!config.ok()) return 2;
#ifdef FOX_NATIVE
  fox::net::InterfaceInfo info;
  if (int status = fox::net::StartFromBootArgs("agent", &info); status != 0) return status;
  auto agent = std::make_shared<Agent>();
  agent->me.config = *config;
  if (getrandom(&agent->me.nonce, sizeof agent->me.nonce, 0) != sizeof agent->me.nonce || agent->me.nonce == 0) {
    agent->me.nonce = fox::clock::NowNs();
  }
  const char* peers = fox::BootArg("fox.peers");
  bool found = false;
  auto r = fox::am::ParsePeers(peers ? peers : "", kPort, [&](fox::NodeId id, uint32_t ip, uint16_t port) {
    if (id == 0) {
      agent->me.frontend = {fox::net::Ipv4{ip}, port};
      found = true;
    }
  });
  if (!r.ok() || !found) {
    std::printf("agent: node %u: fox.peers names no frontend (0@IP)\n", config->self);
    return 2;
  }
  agent->socket = BindFrames(kPort, [agent](const uint8_t* data, size_t length) { agent->OnDatagram(data, length); });
  if (agent->socket.status() != fox::net::Status::kOk) {
    std::printf("agent: node %u: UDP port %u: %s\n", config->self, kPort, fox::net::StatusName(agent->socket.status()));
    return 1;
  }
  std::printf("agent: node %u idle at %s, waiting for a job\n", config->self, info.address.ToString().c_str());
  std::fflush(stdout);
  auto announce = fox::timer::StartPeriodic(kAnnounceNs, [agent] {
    if (!agent->taken) agent->Send(kAnnounce, agent->me.NonceBytes());
  });
  agent->Send(kAnnounce, agent->me.NonceBytes());
  for (;;) {
    std::string text = agent->job.GetFuture().Block();
    const char* why = nullptr;
    if (fox::ReplaceBootArgs(text, &why).ok()) {
      fox::timer::Cancel(announce);
      for (int i = 0; i < 3; ++i) agent->Send(kTaken, agent->me.NonceBytes());  // datagrams: it may lose one
      agent->socket.Close();
      g_taken_by = agent->me;
      std::printf("agent: node %u takes job %s (no reboot)\n", config->self, fox::BootArg("fox.job"));
      std::fflush(stdout);
      return fox::kHandOver;
    }
    std::printf("agent: node %u refuses a job without a reboot: %s\n", config->self, why);
    std::fflush(stdout);
    agent->Send(kRefused, agent->me.NonceBytes() + why);
    agent->job = fox::Promise<std::string>();  // the frontend reboots this node into the job
    agent->taken = false;
    agent->parts.clear();
  }
#else
  if (auto r = fox::am::Start(*config); !r.ok()) {
    std::printf("agent: node %u: cannot start the transport: %s\n", config->self, fox::ErrorName(r.error()));
    return 1;
  }
  std::printf("agent: node %u idle at a Linux process, waiting for a job\n", config->self);
  std::fflush(stdout);
  fox::Promise<int> never;  // the supervisor stops this place
  return never.GetFuture().Block();
#endif
}
