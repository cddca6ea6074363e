// The AM transport's native half (am.h): the NIC's receive interrupt
// recognises AM frames (IPv4, UDP to our address and AM port, not
// fragmented) and hands their payload to the driver at interrupt level,
// without lwIP; every other frame goes on to lwIP's receive ring. Sending
// builds the Ethernet, IPv4 and UDP headers here and hands the frame to the
// NIC directly, so AM traffic never waits for lwIP's core.
//
// Link addresses: an ARP cache of our own with an entry per peer (and the
// gateway), made when the peer is added, so that a job of n nodes costs n
// broadcasts rather than n² (issue 14: 64 nodes asking each other flooded
// the switch). Entries are learned from:
//   - gratuitous ARP: each node announces itself once when the transport
//     opens; every node that already runs and has it as a peer learns it
//     and answers with a unicast ARP reply, so the newcomer learns them;
//   - any ARP packet whose sender is a peer, and the Ethernet source of any
//     AM frame from a peer's address that finds the entry unresolved;
//   - last, requests: a frame for an unresolved entry asks, at most once per
//     backoff (50 ms, doubling to 2 s), and is dropped (counted); once the
//     entry is resolved the channel retransmits it at once (LinkResolved),
//     not after its RTO (100 ms for a peer's first frame).
// ARP packets still go to lwIP, which answers requests for our address.
#include <algorithm>
#include <atomic>
#include <cstring>

#include "am_platform.h"
#include "fox/clock.h"
#include "fox/irq_spinlock.h"
#include "fox/log.h"
#include "fox/net/ip.h"
#include "fox/net/wire.h"
#include "fox/nic.h"

namespace fox::am::internal {
namespace {

constexpr size_t kEth = 14, kIp = 20, kUdp = 8;
constexpr uint16_t kEtherIpv4 = 0x0800, kEtherArp = 0x0806;
constexpr size_t kArpSlots = 2048;  // a power of two, above AmEndpoint::kMaxPeers + 1
constexpr uint64_t kArpFirstRetryNs = 50'000'000, kArpMaxRetryNs = 2'000'000'000;
static_assert(kArpSlots > net::AmEndpoint::kMaxPeers + 1 && (kArpSlots & (kArpSlots - 1)) == 0);

uint16_t Be16(const uint8_t* p) { return net::wire::LoadBe<uint16_t>(p); }
uint32_t Be32(const uint8_t* p) { return net::wire::LoadBe<uint32_t>(p); }
void PutBe16(uint8_t* p, uint16_t v) { net::wire::StoreBe(p, v); }
void PutBe32(uint8_t* p, uint32_t v) { net::wire::StoreBe(p, v); }

uint16_t IpChecksum(const uint8_t* p, size_t n) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < n; i += 2) sum += uint32_t(p[i] << 8 | p[i + 1]);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return uint16_t(~sum);
}

struct ArpEntry {
  uint32_t ip = 0;  // 0: free
  nic::MacAddress mac{};
  bool resolved = false;
  uint64_t requested_ns = 0;  // last request (0: none yet)
  uint64_t backoff_ns = 0;    // until the next one
  bool dropped = false;       // a frame was dropped for want of the MAC
  uint64_t resolved_ns = 0;   // when it was resolved after such a drop (PlatformDroppedBefore)
};

struct State {
  nic::Nic* nic = nullptr;
  nic::MacAddress mac{};
  uint32_t ip = 0, netmask = 0, gateway = 0;
  uint16_t port = 0;
  IrqSpinLock arp_lock;
  ArpEntry arp[kArpSlots];                 // open addressing by IPv4 address; never removed
  uint16_t ip_id = 0;                      // under the transport lock (transmit)
  uint8_t tx[kEth + kIp + kUdp + 1500]{};  // under the transport lock
  std::atomic<uint64_t> rx_not_am{0}, arp_requests{0}, arp_misses{0}, arp_replies{0}, arp_learned{0};
};
constinit State s;

void Bump(std::atomic<uint64_t>& c) { c.fetch_add(1, std::memory_order_relaxed); }

// The entry for `ip`; with `make`, a new one if there is none (nullptr
// when the table is full: cannot happen below kMaxPeers).
ArpEntry* ArpFind(uint32_t ip, bool make = false) REQUIRES(s.arp_lock) {
  if (ip == 0) return nullptr;
  for (size_t i = (ip * 0x9E3779B1u) & (kArpSlots - 1), n = 0; n < kArpSlots; i = (i + 1) & (kArpSlots - 1), ++n) {
    ArpEntry& e = s.arp[i];
    if (e.ip == ip) return &e;
    if (e.ip == 0) {
      if (!make) return nullptr;
      e = ArpEntry{};
      e.ip = ip;
      return &e;
    }
  }
  return nullptr;
}

// Fills the entry of a peer (or the gateway); true when it was unresolved.
bool Learn(uint32_t ip, const uint8_t* mac) {
  if (ip == 0 || (mac[0] & 1)) return false;  // no broadcast or multicast sources
  IrqSpinGuard g(s.arp_lock);
  ArpEntry* e = ArpFind(ip);
  if (e == nullptr) return false;  // only peers and the gateway
  bool was = e->resolved;
  std::memcpy(e->mac.data(), mac, 6);
  e->resolved = true;
  if (!was) Bump(s.arp_learned);
  if (e->dropped) {
    e->dropped = false;
    e->resolved_ns = clock::NowNs();
    LinkResolved();  // fires the pump, which resends them
  }
  return !was;
}

// One ARP packet from us: a request for `target` (broadcast; target == our
// address: a gratuitous announcement) or a reply to `to_mac`/`target`.
void SendArp(uint16_t op, uint32_t target, const uint8_t* to_mac) {
  uint8_t f[42] = {};
  if (to_mac != nullptr) {
    std::memcpy(f, to_mac, 6);
  } else {
    std::memset(f, 0xFF, 6);
  }
  std::memcpy(f + 6, s.mac.data(), 6);
  PutBe16(f + 12, kEtherArp);
  uint8_t* a = f + kEth;
  PutBe16(a + 0, 1);           // Ethernet
  PutBe16(a + 2, kEtherIpv4);  // IPv4
  a[4] = 6;
  a[5] = 4;
  PutBe16(a + 6, op);
  std::memcpy(a + 8, s.mac.data(), 6);
  PutBe32(a + 14, s.ip);
  if (to_mac != nullptr) std::memcpy(a + 18, to_mac, 6);
  PutBe32(a + 24, target);
  if (!s.nic->Send(f, sizeof f).ok()) return;
  Bump(op == 1 ? s.arp_requests : s.arp_replies);
}

// An ARP packet arrived: learn its sender if it is a peer; a peer's
// announcement (gratuitous: sender == target) gets our unicast reply, so
// that it learns us without asking.
void OnArp(const uint8_t* a) {
  if (Be16(a) != 1 || Be16(a + 2) != kEtherIpv4 || a[4] != 6 || a[5] != 4) return;
  uint32_t sender = Be32(a + 14);
  Learn(sender, a + 8);
  bool announcement = Be16(a + 6) == 1 && sender == Be32(a + 24) && sender != s.ip;
  if (announcement) {
    bool peer;
    {
      IrqSpinGuard g(s.arp_lock);
      peer = ArpFind(sender) != nullptr;
    }
    if (peer) SendArp(2, sender, a + 8);
  }
}

uint32_t NextHop(uint32_t ip) {
  if ((ip & s.netmask) == (s.ip & s.netmask) || s.gateway == 0) return ip;
  return s.gateway;
}

// The MAC for `ip`'s next hop, asking for it (with backoff) if unknown.
// Any context.
bool Resolve(uint32_t ip, nic::MacAddress* mac) {
  uint32_t hop = NextHop(ip);
  uint64_t now = clock::NowNs();
  bool ask = false;
  {
    IrqSpinGuard g(s.arp_lock);
    ArpEntry* e = ArpFind(hop, true);
    if (e == nullptr) return false;
    if (e->resolved) {
      *mac = e->mac;
      return true;
    }
    e->dropped = true;  // by the caller
    if (e->requested_ns == 0 || now - e->requested_ns >= e->backoff_ns) {
      e->requested_ns = now;
      e->backoff_ns = e->backoff_ns == 0 ? kArpFirstRetryNs : std::min(2 * e->backoff_ns, kArpMaxRetryNs);
      ask = true;
    }
  }
  if (ask) SendArp(1, hop, nullptr);
  return false;
}

// The NIC's receive handler: interrupt level, kernel core 0.
void OnFrame(const uint8_t* f, size_t n, void*) {
  if (n >= kEth + 28 && Be16(f + 12) == kEtherArp) {
    OnArp(f + kEth);
    net::DeliverFrameFromInterrupt(f, n);  // lwIP answers requests for our address
    return;
  }
  if (n >= kEth + kIp + kUdp && Be16(f + 12) == kEtherIpv4) {
    const uint8_t* ip = f + kEth;
    size_t ihl = size_t(ip[0] & 15) * 4;
    size_t total = Be16(ip + 2);
    bool is_am = (ip[0] >> 4) == 4 && ihl >= kIp && ip[9] == 17 /* UDP */ && Be32(ip + 16) == s.ip &&
                 (Be16(ip + 6) & 0x3FFF) == 0 /* not a fragment */ && total >= ihl + kUdp && kEth + total <= n &&
                 Be16(ip + ihl + 2) == s.port;
    if (is_am && IpChecksum(ip, ihl) == 0) {
      const uint8_t* udp = ip + ihl;
      size_t udp_len = Be16(udp + 4);
      if (udp_len < kUdp || udp_len > total - ihl) return;  // malformed: not for lwIP either
      if (uint32_t src = Be32(ip + 12); (src & s.netmask) == (s.ip & s.netmask)) Learn(src, f + 6);  // on-link peer
      Deliver(udp + kUdp, udp_len - kUdp, MakeAddress(Be32(ip + 12), Be16(udp)));
      return;
    }
    if (is_am) return;  // bad IP checksum: dropped like lwIP would
  }
  Bump(s.rx_not_am);
  net::DeliverFrameFromInterrupt(f, n);
}

}  // namespace

Result<void> PlatformOpen(const Config& config) {
  net::InterfaceInfo info = net::Info();
  if (info.status != net::Status::kOk) {
    LOG_ERROR("am: the network is not up (net::Start first)");
    return Error::kUnsupported;
  }
  s.nic = nic::Get(0);
  if (s.nic == nullptr) return Error::kUnsupported;
  s.mac = s.nic->Mac();
  s.ip = info.address.value;
  s.netmask = info.netmask.value;
  s.gateway = info.gateway.value;
  s.port = config.port;
  {
    IrqSpinGuard g(s.arp_lock);
    (void)ArpFind(NextHop(s.gateway), true);  // the frontend's address: learned from its ARP too
  }
  s.nic->SetRxHandler(OnFrame, nullptr);  // from now on AM frames bypass lwIP
  SendArp(1, s.ip, nullptr);              // gratuitous: the peers that run learn us and answer
  return {};
}

bool PlatformTransmit(uint64_t address, const uint8_t* frame, size_t length) {
  uint32_t dst = AddressIp(address);
  if (length > 1500 - kIp - kUdp) return true;  // cannot happen (kMaxFrameBytes); dropped
  nic::MacAddress mac;
  if (!Resolve(dst, &mac)) {
    Bump(s.arp_misses);
    return true;  // lost for now; the channel retransmits after the reply
  }
  uint8_t* f = s.tx;
  std::memcpy(f, mac.data(), 6);
  std::memcpy(f + 6, s.mac.data(), 6);
  PutBe16(f + 12, kEtherIpv4);
  uint8_t* ip = f + kEth;
  size_t total = kIp + kUdp + length;
  ip[0] = 0x45;
  ip[1] = 0;
  PutBe16(ip + 2, uint16_t(total));
  PutBe16(ip + 4, ++s.ip_id);
  PutBe16(ip + 6, 0x4000);  // don't fragment
  ip[8] = 64;
  ip[9] = 17;
  PutBe16(ip + 10, 0);
  PutBe32(ip + 12, s.ip);
  PutBe32(ip + 16, dst);
  PutBe16(ip + 10, IpChecksum(ip, kIp));
  uint8_t* udp = ip + kIp;
  PutBe16(udp, s.port);
  PutBe16(udp + 2, AddressPort(address));
  PutBe16(udp + 4, uint16_t(kUdp + length));
  PutBe16(udp + 6, 0);  // no UDP checksum (IPv4 allows it; the frame MAC covers the payload)
  std::memcpy(udp + kUdp, frame, length);
  return s.nic->Send(f, kEth + total).ok();
}

// Its entry, unresolved: its announcement, its answer to ours, or its
// first frame fills it; a request only if our first frame to it finds it
// still empty.
void PlatformPeerAdded(uint64_t address) {
  IrqSpinGuard g(s.arp_lock);
  (void)ArpFind(NextHop(AddressIp(address)), true);
}

uint64_t PlatformDroppedBefore(uint64_t address) {
  IrqSpinGuard g(s.arp_lock);
  const ArpEntry* e = ArpFind(NextHop(AddressIp(address)));
  return e != nullptr && e->resolved ? e->resolved_ns : 0;
}

void PlatformStats(Stats* st) {
  st->rx_not_am = s.rx_not_am.load(std::memory_order_relaxed);
  st->arp_requests = s.arp_requests.load(std::memory_order_relaxed);
  st->arp_misses = s.arp_misses.load(std::memory_order_relaxed);
  st->arp_replies = s.arp_replies.load(std::memory_order_relaxed);
  st->arp_learned = s.arp_learned.load(std::memory_order_relaxed);
  if (s.nic != nullptr) st->nic = s.nic->GetStats();
}

}  // namespace fox::am::internal
