// Internal: the lwIP netif over a fox NIC (netif.cc).
#pragma once

#include <cstdint>

#include "fox/nic.h"
#include "lwip/ip4_addr.h"
#include "lwip/netif.h"

namespace fox::net::lwip {

// Adds the interface to lwIP (after lwip_init), allocates the receive ring
// and, if asked, installs the NIC's receive handler. Stack core, event
// context, once. nullptr if lwIP refused the interface.
struct netif* InitNetif(nic::Nic* nic, const ip4_addr_t* address, const ip4_addr_t* netmask, const ip4_addr_t* gateway,
                        bool install_rx_handler);

struct RxRingCounters {
  uint64_t frames, bytes, overflows, too_long, wakeups;
};
// Any core.
RxRingCounters RxCountersSnapshot();

}  // namespace fox::net::lwip
