// Ping: ICMP echo through lwIP's raw API. One raw pcb (ICMP) serves every
// outstanding ping; replies are matched by identifier and sequence number.
// Echo requests *to* this node are answered by lwIP itself (icmp.c).
#include <cstring>
#include <unordered_map>

#include "fox/clock.h"
#include "fox/net/ip.h"
#include "fox/timer.h"
#include "lwip/icmp.h"
#include "lwip/inet_chksum.h"
#include "lwip/ip.h"
#include "lwip/pbuf.h"
#include "lwip/prot/ip4.h"
#include "lwip/raw.h"
#include "stack.h"

namespace fox::net {

using namespace lwip;

namespace {

constexpr uint16_t kIdentifier = 0xF0C5;
constexpr size_t kPayload = 32;

struct Outstanding {
  std::shared_ptr<Promise<PingReply>> promise;
  uint64_t sent_ns;
  timer::TimerId timeout;
};

// Stack core only.
struct raw_pcb* g_pcb = nullptr;
uint16_t g_next_seq = 1;
std::unordered_map<uint16_t, Outstanding> g_outstanding;

// Raw receive: stack core, inside lwIP; p->payload is the IPv4 header.
// Eats only the echo replies we wait for; everything else goes on to lwIP.
u8_t Received(void*, struct raw_pcb*, struct pbuf* p, const ip_addr_t*) {
  uint8_t ip_first;
  if (pbuf_copy_partial(p, &ip_first, 1, 0) != 1) return 0;
  uint16_t header = uint16_t((ip_first & 0x0F) * 4);
  struct icmp_echo_hdr echo;
  if (pbuf_copy_partial(p, &echo, sizeof echo, header) != sizeof echo) return 0;
  if (echo.type != ICMP_ER || lwip_ntohs(echo.id) != kIdentifier) return 0;
  auto it = g_outstanding.find(lwip_ntohs(echo.seqno));
  if (it == g_outstanding.end()) return 0;
  Outstanding o = std::move(it->second);
  g_outstanding.erase(it);
  timer::Cancel(o.timeout);
  PingReply reply{Status::kOk, clock::NowNs() - o.sent_ns};
  Post(kStackCore, [promise = std::move(o.promise), reply] { promise->SetValue(reply); });
  pbuf_free(p);
  return 1;
}

void PingOnStack(Ipv4 to, uint64_t timeout_ms, std::shared_ptr<Promise<PingReply>> promise) {
  auto fail = [&](Status status) { promise->SetValue(PingReply{status, 0}); };
  if (!Started()) return fail(Status::kNotStarted);
  if (g_pcb == nullptr) {
    g_pcb = raw_new(IP_PROTO_ICMP);
    if (g_pcb == nullptr) return fail(Status::kNoMemory);
    raw_recv(g_pcb, Received, nullptr);
  }
  struct pbuf* p = pbuf_alloc(PBUF_IP, sizeof(struct icmp_echo_hdr) + kPayload, PBUF_RAM);
  if (p == nullptr) return fail(Status::kNoMemory);
  uint16_t seq = g_next_seq++;
  auto* echo = static_cast<struct icmp_echo_hdr*>(p->payload);
  ICMPH_TYPE_SET(echo, ICMP_ECHO);
  ICMPH_CODE_SET(echo, 0);
  echo->id = lwip_htons(kIdentifier);
  echo->seqno = lwip_htons(seq);
  echo->chksum = 0;
  auto* data = reinterpret_cast<uint8_t*>(echo + 1);
  for (size_t i = 0; i < kPayload; ++i) data[i] = uint8_t('a' + i % 26);
  echo->chksum = inet_chksum(echo, uint16_t(p->len));
  uint64_t sent = clock::NowNs();
  ip_addr_t dest = ToLwip(to);
  err_t err = raw_sendto(g_pcb, p, &dest);
  pbuf_free(p);
  if (err != ERR_OK) {
    AfterLwip();
    return fail(FromErr(err));
  }
  timer::TimerId timeout = timer::Start(timeout_ms * 1000000, [seq] {
    auto it = g_outstanding.find(seq);
    if (it == g_outstanding.end()) return;
    auto waiting = std::move(it->second.promise);
    g_outstanding.erase(it);
    waiting->SetValue(PingReply{Status::kTimedOut, 0});
  });
  g_outstanding[seq] = Outstanding{std::move(promise), sent, timeout};
  AfterLwip();
}

}  // namespace

Future<PingReply> Ping(Ipv4 to, uint64_t timeout_ms) {
  auto promise = std::make_shared<Promise<PingReply>>();
  auto future = promise->GetFuture();
  RunOnStack([to, timeout_ms, promise]() mutable { PingOnStack(to, timeout_ms, std::move(promise)); });
  return future;
}

}  // namespace fox::net
