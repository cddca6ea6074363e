// Internal to the lwIP port: running things on lwIP's core and keeping
// lwIP's timers and loop queue serviced. See README.md for the design.
#pragma once

#include <cstdint>
#include <utility>

#include "fox/core.h"
#include "fox/event.h"
#include "fox/net/ip.h"
#include "lwip/err.h"
#include "lwip/ip_addr.h"

namespace fox::net::lwip {

// lwIP's core: every lwIP call happens in an event on it.
constexpr int kStackCore = 0;

inline bool OnStackCore() { return core::Current() == kStackCore; }

// Runs `task` on the stack core: at once when called there (from an event,
// never from inside an lwIP callback), else forwarded with SpawnRemote.
template <typename F>
void RunOnStack(F&& task) {
  if (OnStackCore()) {
    task();
  } else {
    event::SpawnRemote(kStackCore, std::forward<F>(task));
  }
}

// Posts `task` as an event on `core`: how results leave lwIP's callbacks
// (user code never runs inside one). Stack core, event context.
void Post(int core, event::Task task);

// Call after anything that may have given lwIP work (a frame, an API call,
// a timer): drains the loopback queue and re-arms the timer for lwIP's next
// timeout. Stack core only.
void AfterLwip();

// True once the interface is added (lwIP initialised). Stack core only.
bool Started();

Status FromErr(err_t err);
inline ip_addr_t ToLwip(Ipv4 a) {
  ip_addr_t out;
  ip_addr_set_ip4_u32_val(out, lwip_htonl(a.value));
  return out;
}
inline Ipv4 FromLwip(const ip_addr_t* a) { return Ipv4{lwip_ntohl(ip_addr_get_ip4_u32(a))}; }

// Counters kept by the port itself (stack core, except the ring's, which
// the interrupt path updates; see netif.cc).
struct PortCounters {
  uint64_t rx_no_pbuf = 0;
  uint64_t tx_frames = 0, tx_bytes = 0, tx_busy = 0, tx_errors = 0;
  uint64_t udp_forward_errors = 0;
};
PortCounters& Counters();

}  // namespace fox::net::lwip
