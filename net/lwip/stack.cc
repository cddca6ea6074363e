// Bringing the interface up, lwIP's timers and loop queue, counters
// (net/lwip/README.md).
//
// lwIP's timeouts (TCP 250 ms, ARP, DHCP, reassembly) are driven by one
// fox::timer on the stack core, re-armed after every entry into lwIP for
// the next lwIP deadline (sys_timeouts_sleeptime), so an idle node with no
// TCP connections wakes only for DHCP/ARP's coarse timers.
#include <cstdio>
#include <cstring>

#include "fox/clock.h"
#include "fox/log.h"
#include "fox/net/ip.h"
#include "fox/spinlock.h"
#include "fox/timer.h"
#include "lwip/dhcp.h"
#include "lwip/init.h"
#include "lwip/netif.h"
#include "lwip/stats.h"
#include "lwip/timeouts.h"
#include "netif_glue.h"
#include "stack.h"

namespace fox::net::lwip {
namespace {

struct netif* g_netif = nullptr;                    // stack core
bool g_dhcp = false;                                // stack core
Ipv4 g_fallback_gateway;                            // stack core: for a DHCP lease without a router
std::shared_ptr<Promise<InterfaceInfo>> g_waiting;  // Start's promise until an address comes
timer::TimerId g_timer = 0;                         // lwIP's timeouts
uint64_t g_timer_deadline = 0;                      // 0: not armed
bool g_loop_poll_pending = false;
PortCounters g_counters;

SpinLock g_info_lock;
InterfaceInfo g_info GUARDED_BY(g_info_lock);

InterfaceInfo Snapshot() {
  SpinGuard guard(g_info_lock);
  return g_info;
}

// lwIP's status callback (address set, DHCP bound or lost). Stack core.
void StatusChanged(struct netif* netif) {
  InterfaceInfo info;
  if (g_dhcp) {
    info.gateway_from_dhcp = !ip4_addr_isany_val(*netif_ip4_gw(netif));
    if (!info.gateway_from_dhcp && !g_fallback_gateway.IsAny() && !ip4_addr_isany_val(*netif_ip4_addr(netif))) {
      ip_addr_t gw = ToLwip(g_fallback_gateway);
      netif_set_gw(netif, ip_2_ip4(&gw));
    }
    if (struct dhcp* dhcp = netif_dhcp_data(netif)) info.dhcp_server = FromLwip(&dhcp->server_ip_addr);
  }
  info.address = FromLwip(&netif->ip_addr);
  info.netmask = FromLwip(&netif->netmask);
  info.gateway = FromLwip(&netif->gw);
  std::memcpy(info.mac.data(), netif->hwaddr, 6);
  info.dhcp = g_dhcp;
  info.status = info.address.IsAny() ? Status::kNotStarted : Status::kOk;
  {
    SpinGuard guard(g_info_lock);
    g_info = info;
  }
  if (info.status == Status::kOk) {
    if (g_dhcp) {
      LOG_INFO("net: DHCP lease %s/%s from %s, gateway %s%s", info.address.ToString().c_str(),
               info.netmask.ToString().c_str(), info.dhcp_server.ToString().c_str(), info.gateway.ToString().c_str(),
               info.gateway_from_dhcp ? "" : " (not offered; fox.gw/Config)");
    } else {
      LOG_INFO("net: static address %s/%s gateway %s", info.address.ToString().c_str(), info.netmask.ToString().c_str(),
               info.gateway.ToString().c_str());
    }
    if (g_waiting) {
      auto waiting = std::move(g_waiting);
      Post(kStackCore, [waiting, info] { waiting->SetValue(info); });
    }
  }
}

void FireTimeouts() {
  g_timer_deadline = 0;
  sys_check_timeouts();
  AfterLwip();
}

void PollLoopback() {
  g_loop_poll_pending = false;
  if (g_netif != nullptr) netif_poll(g_netif);
  AfterLwip();
}

Config g_started_config;  // what Start brought the interface up with

void StartOnStack(const Config& config, std::shared_ptr<Promise<InterfaceInfo>> promise) {
  InterfaceInfo failed;
  if (g_netif != nullptr) {
    // Started already (a pool node's agent started it for the app that took
    // its job): the same addressing is the interface as it is; another is
    // refused.
    const Config& was = g_started_config;
    bool same = was.dhcp == config.dhcp && was.nic == config.nic &&
                (config.dhcp ||
                 (was.address == config.address && was.netmask == config.netmask && was.gateway == config.gateway));
    InterfaceInfo now = Snapshot();
    if (same && now.status == Status::kOk) {
      promise->SetValue(now);
      return;
    }
    failed.status = Status::kInUse;
    promise->SetValue(failed);
    return;
  }
  if (!config.dhcp && config.address.IsAny()) {
    LOG_ERROR("net: a static configuration needs an address");
    failed.status = Status::kInvalidArgument;
    promise->SetValue(failed);
    return;
  }
  nic::Nic* nic = nic::Get(config.nic);
  if (nic == nullptr) {
    LOG_ERROR("net: no NIC %d (this node has %d)", config.nic, nic::Count());
    failed.status = Status::kNoRoute;
    promise->SetValue(failed);
    return;
  }
  lwip_init();
  g_started_config = config;
  ip_addr_t address = ToLwip(config.dhcp ? Ipv4{} : config.address);
  ip_addr_t netmask = ToLwip(config.dhcp ? Ipv4{} : config.netmask);
  ip_addr_t gateway = ToLwip(config.dhcp ? Ipv4{} : config.gateway);
  g_dhcp = config.dhcp;
  g_fallback_gateway = config.dhcp ? config.gateway : Ipv4{};
  g_netif = InitNetif(nic, &address, &netmask, &gateway, config.install_rx_handler);
  if (g_netif == nullptr) {
    failed.status = Status::kNoMemory;
    promise->SetValue(failed);
    return;
  }
  g_waiting = std::move(promise);
  netif_set_status_callback(g_netif, StatusChanged);
  netif_set_link_up(g_netif);
  netif_set_up(g_netif);  // a static address: StatusChanged fulfils the promise
  if (config.dhcp) {
    err_t err = dhcp_start(g_netif);
    if (err != ERR_OK) {
      failed.status = FromErr(err);
      if (g_waiting) std::exchange(g_waiting, nullptr)->SetValue(failed);
    } else {
      timer::Start(config.dhcp_timeout_ms * 1000000, [] {
        if (!g_waiting) return;
        LOG_WARN("net: no DHCP lease yet (lwIP keeps trying)");
        InterfaceInfo info = Snapshot();
        info.status = Status::kTimedOut;
        std::exchange(g_waiting, nullptr)->SetValue(info);
      });
    }
  }
  AfterLwip();
}

}  // namespace

PortCounters& Counters() { return g_counters; }
bool Started() { return g_netif != nullptr; }

void Post(int core, event::Task task) {
  if (core == core::Current()) {
    event::Spawn(std::move(task));
  } else {
    event::SpawnRemote(core, std::move(task));
  }
}

void AfterLwip() {
  if (g_netif != nullptr && g_netif->loop_first != nullptr && !g_loop_poll_pending) {
    g_loop_poll_pending = true;
    event::Spawn(PollLoopback);
  }
  uint32_t sleep_ms = sys_timeouts_sleeptime();
  if (sleep_ms == SYS_TIMEOUTS_SLEEPTIME_INFINITE) return;  // an armed timer may fire early: harmless
  uint64_t deadline = clock::NowNs() + uint64_t(sleep_ms) * 1000000;
  if (g_timer_deadline != 0) {
    if (g_timer_deadline <= deadline) return;
    timer::Cancel(g_timer);
  }
  g_timer_deadline = deadline;
  g_timer = timer::Start(uint64_t(sleep_ms) * 1000000, FireTimeouts);
}

Status FromErr(err_t err) {
  switch (err) {
    case ERR_OK: return Status::kOk;
    case ERR_MEM:
    case ERR_BUF: return Status::kNoMemory;
    case ERR_TIMEOUT: return Status::kTimedOut;
    case ERR_RTE:
    case ERR_IF: return Status::kNoRoute;
    case ERR_USE:
    case ERR_ALREADY:
    case ERR_ISCONN:
    case ERR_INPROGRESS: return Status::kInUse;
    case ERR_CONN: return Status::kNotConnected;
    case ERR_CLSD: return Status::kClosed;
    case ERR_RST: return Status::kReset;
    case ERR_ABRT: return Status::kAborted;
    default: return Status::kInvalidArgument;  // ERR_VAL, ERR_ARG, ERR_WOULDBLOCK
  }
}

}  // namespace fox::net::lwip

namespace fox::net {

using namespace lwip;

Future<InterfaceInfo> Start(const Config& config) {
  auto promise = std::make_shared<Promise<InterfaceInfo>>();
  auto future = promise->GetFuture();
  RunOnStack([config, promise]() mutable { StartOnStack(config, std::move(promise)); });
  return future;
}

int StartFromBootArgs(const char* who, InterfaceInfo* info) {
  auto config = ConfigFromBootArgs();
  if (!config.ok()) return 2;
  InterfaceInfo up = Start(*config).Block();
  if (info != nullptr) *info = up;
  if (up.status == Status::kOk) return 0;
  std::printf("%s: network: %s\n", who, StatusName(up.status));
  return up.status == Status::kInvalidArgument ? 2 : 1;
}

InterfaceInfo Info() { return Snapshot(); }

Stats GetStats() {
  Stats s{};
  RxRingCounters rx = RxCountersSnapshot();
  s.rx_frames = rx.frames;
  s.rx_bytes = rx.bytes;
  s.rx_ring_overflows = rx.overflows;
  s.rx_too_long = rx.too_long;
  s.rx_wakeups = rx.wakeups;
  // The rest is written on the stack core; 64- and 32-bit aligned loads
  // are atomic on x86-64, so a reader elsewhere sees each counter whole.
  const PortCounters& c = Counters();
  s.rx_no_pbuf = c.rx_no_pbuf;
  s.tx_frames = c.tx_frames;
  s.tx_bytes = c.tx_bytes;
  s.tx_busy = c.tx_busy;
  s.tx_errors = c.tx_errors;
  s.ip_drops = lwip_stats.ip.drop;
  s.icmp_rx = lwip_stats.icmp.recv;
  s.icmp_tx = lwip_stats.icmp.xmit;
  s.udp_rx = lwip_stats.udp.recv;
  s.udp_tx = lwip_stats.udp.xmit;
  s.udp_drops = lwip_stats.udp.drop + c.udp_forward_errors;
  s.tcp_rx = lwip_stats.tcp.recv;
  s.tcp_tx = lwip_stats.tcp.xmit;
  s.tcp_drops = lwip_stats.tcp.drop;
  s.tcp_retransmits = lwip_stats.mib2.tcpretranssegs;
  s.mem_errors = lwip_stats.mem.err;
  for (int i = 0; i < MEMP_MAX; ++i) {
    if (lwip_stats.memp[i] != nullptr) s.mem_errors += lwip_stats.memp[i]->err;
  }
  return s;
}

}  // namespace fox::net
