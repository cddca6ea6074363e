// The AM transport's native half (am.h): the NIC's receive interrupt
// recognises AM frames (IPv4, UDP to our address and AM port, not
// fragmented) and hands their payload to the driver at interrupt level,
// without lwIP; every other frame goes on to lwIP's receive ring. Sending
// builds the Ethernet, IPv4 and UDP headers here and hands the frame to the
// NIC directly, so AM traffic never waits for lwIP's core.
//
// Link addresses: a small ARP cache of our own, filled by snooping every
// ARP packet that arrives (the AM receive path does not touch it), after
// ARP requests sent when a peer is added or a frame finds no entry (at
// most one request per address per 50 ms). A frame without a MAC is dropped
// (counted); the channel retransmits it once the reply is in. ARP packets
// still go to lwIP, which answers requests for our address.
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
constexpr int kArpEntries = 128;
constexpr uint64_t kArpRetryNs = 50'000'000;

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
  uint64_t requested_ns = 0;
};

struct State {
  nic::Nic* nic = nullptr;
  nic::MacAddress mac{};
  uint32_t ip = 0, netmask = 0, gateway = 0;
  uint16_t port = 0;
  IrqSpinLock arp_lock;
  ArpEntry arp[kArpEntries];
  uint16_t ip_id = 0;                    // under the transport lock (transmit)
  uint8_t tx[kEth + kIp + kUdp + 1500];  // under the transport lock
  std::atomic<uint64_t> rx_not_am{0}, arp_requests{0}, arp_misses{0};
};
State s;

void Bump(std::atomic<uint64_t>& c) { c.fetch_add(1, std::memory_order_relaxed); }

ArpEntry* ArpFind(uint32_t ip) REQUIRES(s.arp_lock) {
  for (auto& e : s.arp) {
    if (e.ip == ip) return &e;
  }
  return nullptr;
}

ArpEntry* ArpSlot(uint32_t ip) REQUIRES(s.arp_lock) {
  if (ArpEntry* e = ArpFind(ip)) return e;
  for (auto& e : s.arp) {
    if (e.ip == 0) {
      e = ArpEntry{};
      e.ip = ip;
      return &e;
    }
  }
  // Full: reuse an unresolved entry, else the first (peers are few).
  for (auto& e : s.arp) {
    if (!e.resolved) {
      e = ArpEntry{};
      e.ip = ip;
      return &e;
    }
  }
  s.arp[0] = ArpEntry{};
  s.arp[0].ip = ip;
  return &s.arp[0];
}

void Learn(uint32_t ip, const uint8_t* mac) {
  if (ip == 0 || (mac[0] & 1)) return;  // no broadcast or multicast sources
  IrqSpinGuard g(s.arp_lock);
  ArpEntry* e = ArpFind(ip);
  if (e == nullptr) return;  // only addresses we asked about: peers and the gateway
  std::memcpy(e->mac.data(), mac, 6);
  e->resolved = true;
}

void SendArpRequest(uint32_t target) {
  uint8_t f[42] = {};
  std::memset(f, 0xFF, 6);
  std::memcpy(f + 6, s.mac.data(), 6);
  PutBe16(f + 12, kEtherArp);
  uint8_t* a = f + kEth;
  PutBe16(a + 0, 1);           // Ethernet
  PutBe16(a + 2, kEtherIpv4);  // IPv4
  a[4] = 6;
  a[5] = 4;
  PutBe16(a + 6, 1);  // request
  std::memcpy(a + 8, s.mac.data(), 6);
  PutBe32(a + 14, s.ip);
  PutBe32(a + 24, target);
  if (s.nic->Send(f, sizeof f).ok()) Bump(s.arp_requests);
}

uint32_t NextHop(uint32_t ip) {
  if ((ip & s.netmask) == (s.ip & s.netmask) || s.gateway == 0) return ip;
  return s.gateway;
}

// The MAC for `ip`'s next hop, asking for it if unknown. Any context.
bool Resolve(uint32_t ip, nic::MacAddress* mac) {
  uint32_t hop = NextHop(ip);
  uint64_t now = clock::NowNs();
  bool ask = false;
  {
    IrqSpinGuard g(s.arp_lock);
    ArpEntry* e = ArpSlot(hop);
    if (e->resolved) {
      *mac = e->mac;
      return true;
    }
    if (e->requested_ns == 0 || now - e->requested_ns >= kArpRetryNs) {
      e->requested_ns = now;
      ask = true;
    }
  }
  if (ask) SendArpRequest(hop);
  return false;
}

// The NIC's receive handler: interrupt level, kernel core 0.
void OnFrame(const uint8_t* f, size_t n, void*) {
  if (n >= kEth + 28 && Be16(f + 12) == kEtherArp) {
    const uint8_t* a = f + kEth;
    if (Be16(a) == 1 && Be16(a + 2) == kEtherIpv4 && a[4] == 6 && a[5] == 4) Learn(Be32(a + 14), a + 8);
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
  s.nic->SetRxHandler(OnFrame, nullptr);  // from now on AM frames bypass lwIP
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

void PlatformPeerAdded(uint64_t address) {
  nic::MacAddress mac;
  (void)Resolve(AddressIp(address), &mac);
}

void PlatformStats(Stats* st) {
  st->rx_not_am = s.rx_not_am.load(std::memory_order_relaxed);
  st->arp_requests = s.arp_requests.load(std::memory_order_relaxed);
  st->arp_misses = s.arp_misses.load(std::memory_order_relaxed);
  if (s.nic != nullptr) st->nic = s.nic->GetStats();
}

}  // namespace fox::am::internal
