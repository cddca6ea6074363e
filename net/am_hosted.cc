// The AM transport's hosted half (am.h): a non-blocking UDP socket, read in
// events of the transport core. The core's epoll loop watches the socket
// (hosted::WatchReadable) and, when the core is idle and a datagram waits,
// fires a trigger whose event drains the socket with recvmmsg into the
// driver. A busy core keeps draining as long as datagrams keep coming (the
// drain event re-posts itself when it used its whole budget).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "am_platform.h"
#include "fox/event.h"
#include "fox/hosted.h"
#include "fox/log.h"
#include "fox/net/frontend_link.h"

namespace fox::am::internal {
namespace {

constexpr int kBatch = 32;  // datagrams per recvmmsg
constexpr int kBudget = 8;  // recvmmsg calls per drain event
constexpr size_t kBufferBytes = 2048;

int g_fd = -1;
event::InterruptTrigger* g_rx = nullptr;
uint8_t g_buffers[kBatch][kBufferBytes];  // the transport core only

void Drain() {
  g_rx->Arm();  // first: a datagram arriving after our last read posts again
  mmsghdr msgs[kBatch];
  iovec iov[kBatch];
  sockaddr_in from[kBatch];
  for (int round = 0; round < kBudget; ++round) {
    for (int i = 0; i < kBatch; ++i) {
      iov[i] = {g_buffers[i], kBufferBytes};
      msgs[i] = {};
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
      msgs[i].msg_hdr.msg_name = &from[i];
      msgs[i].msg_hdr.msg_namelen = sizeof from[i];
    }
    int n = recvmmsg(g_fd, msgs, kBatch, MSG_DONTWAIT, nullptr);
    if (n <= 0) return;  // EAGAIN: drained; the watch fires again when more arrives
    for (int i = 0; i < n; ++i) {
      // A datagram longer than the buffer is truncated (MSG_TRUNC): it is
      // bigger than any frame, so the decoder drops it as oversized.
      size_t len = msgs[i].msg_len;
      if (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) len = kBufferBytes;
      Deliver(g_buffers[i], len, MakeAddress(ntohl(from[i].sin_addr.s_addr), ntohs(from[i].sin_port)));
    }
    if (n < kBatch) return;
  }
  event::Spawn([] { Drain(); });  // budget used: let other events run, then go on
}

void OnReadable(void*) { g_rx->Fire(); }

}  // namespace

Result<void> PlatformOpen(const Config& config) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error::kUnsupported;
  int size = 4 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(config.port);
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    LOG_ERROR("am: cannot bind UDP port %u: %s", config.port, std::strerror(errno));
    close(fd);
    return Error::kBusy;
  }
  g_fd = fd;
  g_rx = new event::InterruptTrigger(config.core, [] { Drain(); });
  event::SpawnRemote(config.core, [] { Drain(); });  // arms the trigger on its core
  if (!hosted::WatchReadable(config.core, fd, OnReadable, nullptr)) {
    LOG_ERROR("am: cannot watch the UDP socket");
    return Error::kUnsupported;
  }
  frontend::internal::WatchNotices(config.core);
  return {};
}

bool PlatformTransmit(uint64_t address, const uint8_t* frame, size_t length) {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(AddressPort(address));
  to.sin_addr.s_addr = htonl(AddressIp(address));
  for (;;) {
    ssize_t n = sendto(g_fd, frame, length, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&to), sizeof to);
    if (n == ssize_t(length)) return true;
    if (n < 0 && errno == EINTR) continue;
    // EAGAIN (socket buffer full): retried by the channel. Other errors
    // (no route, ICMP refusals reported on the socket) are like a loss.
    return n < 0 && errno == EAGAIN ? false : true;
  }
}

void PlatformPeerAdded(uint64_t) {}

uint64_t PlatformDroppedBefore(uint64_t) { return 0; }  // the kernel's ARP queues

void PlatformStats(Stats*) {}

}  // namespace fox::am::internal
