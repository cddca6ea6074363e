// UDP sockets over lwIP's raw UDP API (fox/net/ip.h for the contract).
//
// Ownership: while its pcb is bound, a State holds a reference to itself
// (`self`, stack core), so lwIP's bare `arg` pointer stays valid and every
// event posted from lwIP's callbacks carries a reference of its own. Close
// removes the pcb and drops `self` on the stack core. The pcb belongs to the
// stack core; the receive handler to the home core, where callbacks run.
#include <atomic>
#include <cstring>
#include <vector>

#include "fox/net/ip.h"
#include "lwip/pbuf.h"
#include "lwip/udp.h"
#include "stack.h"

namespace fox::net {

using namespace lwip;

struct UdpSocket::State {
  int home = 0;
  std::atomic<Status> status{Status::kNotStarted};
  std::atomic<uint16_t> port{0};
  std::atomic<bool> closed{false};
  struct udp_pcb* pcb = nullptr;  // stack core
  std::shared_ptr<State> self;    // stack core; set while pcb is bound
  ReceiveHandler on_receive;      // home core
};

namespace {

using State = UdpSocket::State;

// lwIP's receive callback: stack core, inside lwIP. The datagram goes to an
// event on the home core.
void Received(void* arg, struct udp_pcb*, struct pbuf* p, const ip_addr_t* addr, u16_t port) {
  auto* s = static_cast<State*>(arg);
  Post(s->home, [self = s->self, packet = Packet(p), from = Endpoint{FromLwip(addr), port}]() mutable {
    if (self->closed.load(std::memory_order_acquire) || !self->on_receive) return;
    self->on_receive(std::move(packet), from);
  });
}

Status SendOnStack(State* s, Endpoint to, const void* data, size_t length) {
  if (s->pcb == nullptr) return s->closed.load() ? Status::kNotConnected : s->status.load();
  if (length > 65507) return Status::kInvalidArgument;
  struct pbuf* p = pbuf_alloc(PBUF_TRANSPORT, uint16_t(length), PBUF_RAM);
  if (p == nullptr) return Status::kNoMemory;
  if (length > 0) std::memcpy(p->payload, data, length);
  ip_addr_t ip = ToLwip(to.ip);
  err_t err = udp_sendto(s->pcb, p, &ip, to.port);
  pbuf_free(p);
  AfterLwip();
  return FromErr(err);
}

void CloseOnStack(const std::shared_ptr<State>& s) {
  s->closed.store(true, std::memory_order_release);
  if (s->pcb != nullptr) {
    udp_remove(s->pcb);
    s->pcb = nullptr;
  }
  s->self.reset();
  // The handler may hold handles to this socket: drop it on its own core.
  Post(s->home, [s] { s->on_receive = nullptr; });
}

}  // namespace

Future<UdpSocket> UdpSocket::Bind(uint16_t port, ReceiveHandler on_receive) {
  auto state = std::make_shared<State>();
  state->home = core::Current();
  state->on_receive = std::move(on_receive);
  auto promise = std::make_shared<Promise<UdpSocket>>();
  auto future = promise->GetFuture();
  RunOnStack([state, promise, port] {
    Status status = Status::kOk;
    if (!Started()) {
      status = Status::kNotStarted;
    } else if ((state->pcb = udp_new()) == nullptr) {
      status = Status::kNoMemory;
    } else if (err_t err = udp_bind(state->pcb, IP_ANY_TYPE, port); err != ERR_OK) {
      status = FromErr(err);
      udp_remove(state->pcb);
      state->pcb = nullptr;
    } else {
      state->self = state;
      state->port.store(state->pcb->local_port, std::memory_order_relaxed);
      udp_recv(state->pcb, Received, state.get());
    }
    state->status.store(status, std::memory_order_release);
    promise->SetValue(UdpSocket(state));
  });
  return future;
}

Status UdpSocket::status() const {
  if (!state_) return Status::kNotConnected;
  if (state_->closed.load(std::memory_order_acquire)) return Status::kNotConnected;
  return state_->status.load(std::memory_order_acquire);
}

uint16_t UdpSocket::port() const { return state_ ? state_->port.load(std::memory_order_relaxed) : 0; }

Status UdpSocket::SendTo(Endpoint to, const void* data, size_t length) {
  if (!state_) return Status::kNotConnected;
  if (OnStackCore()) return SendOnStack(state_.get(), to, data, length);
  if (length > 65507) return Status::kInvalidArgument;
  Status status = this->status();
  if (status != Status::kOk) return status;
  std::vector<uint8_t> copy(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + length);
  event::SpawnRemote(kStackCore, [s = state_, to, copy = std::move(copy)] {
    if (SendOnStack(s.get(), to, copy.data(), copy.size()) != Status::kOk) ++Counters().udp_forward_errors;
  });
  return Status::kOk;
}

void UdpSocket::Close() {
  if (!state_) return;
  if (state_->home == core::Current()) state_->closed.store(true, std::memory_order_release);
  RunOnStack([s = state_] { CloseOnStack(s); });
}

}  // namespace fox::net
