// Network interfaces, as seen by the network stack (net/) on either platform.
//
// A NIC delivers every received Ethernet frame to one receive handler. On
// native nodes the handler runs at interrupt level on a kernel core (the
// active-message fast path, DESIGN.md): it must not allocate, block or
// throw, and the frame is only valid during the call — copy what you keep,
// or post an event (with memory allocated beforehand).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "fox/result.h"

namespace fox::nic {

using MacAddress = std::array<uint8_t, 6>;
using RxHandler = void (*)(const uint8_t* frame, size_t length, void* context);

struct Stats {
  uint64_t rx_packets, rx_bytes, rx_dropped;  // dropped: no handler, bad length, no buffer
  uint64_t tx_packets, tx_bytes, tx_dropped;  // dropped: ring full, too long
  uint64_t interrupts;
};

class Nic {
 public:
  virtual ~Nic() = default;
  virtual MacAddress Mac() const = 0;
  virtual size_t Mtu() const = 0;  // largest frame payload (1500 for Ethernet)
  // Copies `frame` (a whole Ethernet frame, no FCS) into a transmit buffer
  // and hands it to the device. kBusy when the transmit ring is full,
  // kInvalidArgument when longer than Mtu() + 14. Any core, events or
  // interrupt level; never blocks.
  virtual Result<void> Send(const void* frame, size_t length) = 0;
  // Installs the receive handler (one per NIC; nullptr drops frames).
  virtual void SetRxHandler(RxHandler handler, void* context) = 0;
  virtual Stats GetStats() const = 0;
};

// The NICs, in PCI order. On a native node the first call finds and starts
// them (the network starts them; a node without one never does).
int Count();
Nic* Get(int index);

}  // namespace fox::nic
