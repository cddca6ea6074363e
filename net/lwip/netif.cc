// The lwIP network interface over a fox::nic::Nic (net/lwip/README.md).
//
// Receive. The NIC's handler runs at interrupt level on kernel core 0. It
// copies the frame into a preallocated ring (single producer: the interrupt
// path; single consumer: an event on core 0 — the same core, so the ring
// only needs compiler ordering, expressed with acquire/release atomics) and,
// if no pump event is pending, posts one. Posting must not allocate, so the
// pump's queue node is allocated beforehand, in event context: the pump
// re-arms a fresh node first thing, then drains the ring into lwIP. The
// interrupt takes the armed node with one atomic exchange and pushes it on
// core 0's event queue (the loop's lock-free MPSC queue, the path
// SpawnRemote uses), which also ends core 0's sleep. So core 0 sleeps when
// idle (no idle handler, no polling timer) and a burst of frames costs one
// event, not one per frame.
//
// Why not the alternatives: an idle handler would keep core 0 from ever
// sleeping; a periodic polling timer adds latency and wake-ups; SpawnRemote
// itself allocates. event::InterruptTrigger is the interrupt-safe post.
//
// Transmit: lwIP's linkoutput copies the pbuf chain into one buffer and
// calls Nic::Send (which copies it into the device's ring).
#include <atomic>
#include <cstring>

#include "fox/event.h"
#include "fox/log.h"
#include "fox/nic.h"
#include "lwip/etharp.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/stats.h"
#include "netif/ethernet.h"
#include "netif_glue.h"
#include "stack.h"

namespace fox::net::lwip {
namespace {

constexpr uint32_t kRingSlots = 256;  // power of two
constexpr size_t kSlotBytes = 1536;   // >= 1514, the largest Ethernet frame without FCS
constexpr int kPumpBudget = 64;       // frames per pump event, then yield to other events

struct Slot {
  uint32_t length;
  uint8_t data[kSlotBytes];
};

Slot* g_ring = nullptr;           // allocated by InitNetif, before the handler is installed
std::atomic<uint32_t> g_head{0};  // next slot the producer fills
std::atomic<uint32_t> g_tail{0};  // next slot the consumer drains
void Pump();
event::InterruptTrigger g_wakeup(kStackCore, [] { Pump(); });  // armed in event context

// Written only by the interrupt path (single writer); read from any core.
struct RxCounters {
  std::atomic<uint64_t> frames{0}, bytes{0}, overflows{0}, too_long{0}, wakeups{0};
} g_rx;

void Bump(std::atomic<uint64_t>& c, uint64_t n = 1) {
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

struct netif g_netif;
nic::Nic* g_nic = nullptr;
uint8_t g_tx_buffer[kSlotBytes];  // stack core only

// Event context, stack core: the next interrupt may post the pump.
void ArmWakeup() { g_wakeup.Arm(); }

// Drains up to kPumpBudget frames into lwIP. Stack core, event.
void Pump() {
  ArmWakeup();  // before draining: a frame that lands after our last look posts again
  int budget = kPumpBudget;
  bool more = false;
  for (;;) {
    uint32_t tail = g_tail.load(std::memory_order_relaxed);
    if (tail == g_head.load(std::memory_order_acquire)) break;
    if (budget-- == 0) {
      more = true;
      break;
    }
    const Slot& slot = g_ring[tail % kRingSlots];
    struct pbuf* p = pbuf_alloc(PBUF_RAW, uint16_t(slot.length), PBUF_POOL);
    if (p == nullptr) {
      ++Counters().rx_no_pbuf;
      LINK_STATS_INC(link.memerr);
      LINK_STATS_INC(link.drop);
    } else {
      pbuf_take(p, slot.data, uint16_t(slot.length));
      LINK_STATS_INC(link.recv);
      if (g_netif.input(p, &g_netif) != ERR_OK) pbuf_free(p);
    }
    g_tail.store(tail + 1, std::memory_order_release);
  }
  if (more) event::Spawn([] { Pump(); });
  AfterLwip();
}

void OnFrame(const uint8_t* frame, size_t length, void*) { DeliverFrameFromInterrupt(frame, length); }

err_t LinkOutput(struct netif* netif, struct pbuf* p) {
  auto& c = Counters();
  if (p->tot_len > sizeof g_tx_buffer) {
    ++c.tx_errors;
    LINK_STATS_INC(link.lenerr);
    return ERR_BUF;
  }
  uint16_t length = pbuf_copy_partial(p, g_tx_buffer, p->tot_len, 0);
  auto r = g_nic->Send(g_tx_buffer, length);
  if (!r.ok()) {
    // A full transmit ring loses the frame as a busy wire would; TCP
    // retransmits. Reporting ERR_OK keeps lwIP from treating it as fatal.
    if (r.error() == Error::kBusy)
      ++c.tx_busy;
    else
      ++c.tx_errors;
    LINK_STATS_INC(link.drop);
    return ERR_OK;
  }
  ++c.tx_frames;
  c.tx_bytes += length;
  LINK_STATS_INC(link.xmit);
  return ERR_OK;
}

err_t NetifInit(struct netif* netif) {
  netif->name[0] = 'e';
  netif->name[1] = 'n';
  netif->output = etharp_output;
  netif->linkoutput = LinkOutput;
  netif->mtu = uint16_t(g_nic->Mtu());
  netif->hwaddr_len = ETH_HWADDR_LEN;
  auto mac = g_nic->Mac();
  std::memcpy(netif->hwaddr, mac.data(), ETH_HWADDR_LEN);
  netif->flags = NETIF_FLAG_BROADCAST | NETIF_FLAG_ETHARP | NETIF_FLAG_ETHERNET;
  return ERR_OK;
}

}  // namespace

struct netif* InitNetif(nic::Nic* nic, const ip4_addr_t* address, const ip4_addr_t* netmask, const ip4_addr_t* gateway,
                        bool install_rx_handler) {
  g_nic = nic;
  if (g_ring == nullptr) g_ring = new Slot[kRingSlots];
  if (netif_add(&g_netif, address, netmask, gateway, nullptr, NetifInit, ethernet_input) == nullptr) return nullptr;
  netif_set_default(&g_netif);
  ArmWakeup();
  if (install_rx_handler) nic->SetRxHandler(OnFrame, nullptr);
  return &g_netif;
}

RxRingCounters RxCountersSnapshot() {
  return RxRingCounters{g_rx.frames.load(std::memory_order_relaxed), g_rx.bytes.load(std::memory_order_relaxed),
                        g_rx.overflows.load(std::memory_order_relaxed), g_rx.too_long.load(std::memory_order_relaxed),
                        g_rx.wakeups.load(std::memory_order_relaxed)};
}

}  // namespace fox::net::lwip

namespace fox::net {

using namespace lwip;

void DeliverFrameFromInterrupt(const uint8_t* frame, size_t length) {
  Slot* ring = g_ring;
  if (ring == nullptr) {
    Bump(g_rx.overflows);
    return;
  }
  if (length > kSlotBytes) {
    Bump(g_rx.too_long);
    return;
  }
  uint32_t head = g_head.load(std::memory_order_relaxed);
  if (head - g_tail.load(std::memory_order_acquire) == kRingSlots) {
    Bump(g_rx.overflows);
  } else {
    Slot& slot = ring[head % kRingSlots];
    std::memcpy(slot.data, frame, length);
    slot.length = uint32_t(length);
    g_head.store(head + 1, std::memory_order_release);
    Bump(g_rx.frames);
    Bump(g_rx.bytes, length);
  }
  if (g_wakeup.Fire()) Bump(g_rx.wakeups);
}

}  // namespace fox::net
