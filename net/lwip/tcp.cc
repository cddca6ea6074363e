// TCP connections and listeners over lwIP's raw TCP API (fox/net/ip.h for
// the contract).
//
// Design. A State is shared by the user's handles, the events in flight
// and, while lwIP has a pcb for it, lwIP itself: `self` (stack core) keeps
// it alive for lwIP's bare `arg` pointer and is dropped when the pcb goes
// (close, reset, abort). Fields are owned by one core each, as marked:
// lwIP-facing state by the stack core, handlers by the home core; the few
// read anywhere are atomics.
//
// Receive: lwIP's recv callback turns each pbuf chain into a Packet posted
// to the home core; the window is reopened (tcp_recved) only after the
// handler has run, so a consumer that falls behind shuts the window and the
// peer waits: receive backpressure, no unbounded buffering. Until a receive
// handler is set, pbufs are held (window shut). A FIN is reported (kClosed)
// after the data before it.
//
// Send: Send copies the bytes into a queue on the stack core; PumpSend moves
// as much as lwIP's send buffer takes (tcp_sndbuf) with tcp_write, again on
// every `sent` callback and every poll (0.5 s, for the case where lwIP's
// memory rather than the window was short). A Send's future is fulfilled
// once all its bytes are in lwIP's buffer: that is the backpressure.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <vector>

#include "fox/log.h"
#include "fox/net/ip.h"
#include "lwip/pbuf.h"
#include "lwip/tcp.h"
#include "stack.h"

namespace fox::net {

using namespace lwip;

struct TcpSocket::State {
  struct PendingSend {
    std::vector<uint8_t> data;
    size_t offset;
    std::shared_ptr<Promise<Status>> promise;
  };

  int home = 0;
  std::atomic<Status> status{Status::kNotConnected};
  std::atomic<size_t> queued{0};
  std::atomic<bool> closed{false};  // our Close/Abort: no more callbacks
  Endpoint local, remote;           // set before the socket is handed out

  // Stack core.
  struct tcp_pcb* pcb = nullptr;
  std::shared_ptr<State> self;
  std::deque<PendingSend> sendq;
  std::deque<struct pbuf*> held;  // received before a handler was set
  size_t unrecved = 0;            // bytes taken from lwIP and not yet given back (tcp_recved)
  bool delivering = false;        // a receive handler is set
  bool peer_finished = false;     // FIN received
  Status end = Status::kOk;       // reset/abort reason once the pcb is gone
  bool end_reported = false;
  bool closing = false;
  std::shared_ptr<Promise<TcpSocket>> connecting;

  // Home core.
  ReceiveHandler on_receive;
  CloseHandler on_close;
  bool close_seen = false;
  Status close_status = Status::kOk;
};

struct TcpListener::State {
  int home = 0;
  std::vector<int> homes;  // the accepted sockets' homes, in turn (set before listening)
  std::atomic<Status> status{Status::kNotStarted};
  std::atomic<uint16_t> port{0};
  std::atomic<bool> closed{false};
  // Stack core.
  struct tcp_pcb* pcb = nullptr;  // a listening pcb
  std::shared_ptr<State> self;
  size_t next_home = 0;
  // Stack core; each accepted socket's event holds it too (it runs on the
  // socket's home).
  std::shared_ptr<AcceptHandler> on_accept;
};

namespace {

using Conn = TcpSocket::State;
using ConnPtr = std::shared_ptr<Conn>;

Endpoint Local(const struct tcp_pcb* pcb) { return Endpoint{FromLwip(&pcb->local_ip), pcb->local_port}; }
Endpoint Remote(const struct tcp_pcb* pcb) { return Endpoint{FromLwip(&pcb->remote_ip), pcb->remote_port}; }

// ---- the home side ----

// On the home core: the connection ended (FIN, reset, abort).
void NotifyEnd(const ConnPtr& s, Status why) {
  if (s->closed.load(std::memory_order_acquire) || s->close_seen) return;
  s->close_seen = true;
  s->close_status = why;
  if (s->on_close) s->on_close(why);
}

// ---- the stack side ----

void FailSends(Conn* s, Status why) {
  while (!s->sendq.empty()) {
    auto item = std::move(s->sendq.front());
    s->sendq.pop_front();
    s->queued.fetch_sub(item.data.size() - item.offset, std::memory_order_relaxed);
    item.promise->SetValue(why);
  }
}

// Reports a FIN (after held data) or a reset/abort, once.
void ReportEndIfDue(const ConnPtr& s) {
  if (s->end_reported) return;
  Status why;
  if (s->end != Status::kOk) {
    why = s->end;
  } else if (s->peer_finished && s->delivering) {
    why = Status::kClosed;
  } else {
    return;
  }
  s->end_reported = true;
  Post(s->home, [s, why] { NotifyEnd(s, why); });
}

void DropPcb(Conn* s) {
  s->pcb = nullptr;
  if (s->closed.load(std::memory_order_relaxed)) {
    for (struct pbuf* p : s->held) pbuf_free(p);
    s->held.clear();
  }
}

// Posts received data to the home core; once the handler has run, the
// window is reopened by as much (tcp_recved), so a slow consumer slows the
// peer. Stack core.
void Deliver(const ConnPtr& s, struct pbuf* p) {
  Post(s->home, [s, packet = Packet(p)]() mutable {
    u16_t length = u16_t(packet.size());
    if (!s->closed.load(std::memory_order_acquire) && s->on_receive) s->on_receive(std::move(packet));
    RunOnStack([s, length] {
      if (s->pcb == nullptr) return;
      u16_t give = u16_t(std::min<size_t>(s->unrecved, length));  // a close may have given it back
      s->unrecved -= give;
      if (give != 0) tcp_recved(s->pcb, give);
      AfterLwip();
    });
  });
}

err_t Recv(void* arg, struct tcp_pcb*, struct pbuf* p, err_t) {
  auto* s = static_cast<Conn*>(arg);
  if (p == nullptr) {
    s->peer_finished = true;
    ReportEndIfDue(s->self);
    return ERR_OK;
  }
  s->unrecved += p->tot_len;
  if (!s->delivering) {
    s->held.push_back(p);
    return ERR_OK;
  }
  Deliver(s->self, p);
  return ERR_OK;
}

void DoClose(Conn* s);

void PumpSend(Conn* s) {
  if (s->pcb == nullptr) return;
  bool wrote = false;
  while (!s->sendq.empty()) {
    auto& item = s->sendq.front();
    size_t left = item.data.size() - item.offset;
    if (left > 0) {
      size_t room = tcp_sndbuf(s->pcb);
      if (room == 0) break;
      size_t n = std::min({left, room, size_t(0xFFFF)});
      u8_t flags = TCP_WRITE_FLAG_COPY;
      if (n < left || s->sendq.size() > 1) flags |= TCP_WRITE_FLAG_MORE;
      err_t err = tcp_write(s->pcb, item.data.data() + item.offset, u16_t(n), flags);
      if (err == ERR_MEM) break;  // lwIP's queue or memory: the next sent/poll retries
      if (err != ERR_OK) {
        FailSends(s, FromErr(err));
        break;
      }
      wrote = true;
      item.offset += n;
      s->queued.fetch_sub(n, std::memory_order_relaxed);
      if (item.offset < item.data.size()) continue;
    }
    auto promise = std::move(item.promise);
    s->sendq.pop_front();
    promise->SetValue(Status::kOk);
  }
  if (wrote) tcp_output(s->pcb);
  if (s->closing && s->sendq.empty()) DoClose(s);
}

err_t Sent(void* arg, struct tcp_pcb*, u16_t) {
  PumpSend(static_cast<Conn*>(arg));
  return ERR_OK;
}

err_t Poll(void* arg, struct tcp_pcb*) {
  PumpSend(static_cast<Conn*>(arg));
  return ERR_OK;
}

// lwIP freed the pcb (reset, abort, or a failed connect).
void Err(void* arg, err_t err) {
  auto* s = static_cast<Conn*>(arg);
  ConnPtr keep = s->self;  // s may lose its last other reference below
  Status why = FromErr(err);
  if (why == Status::kOk || why == Status::kClosed) why = Status::kAborted;
  DropPcb(s);
  s->status.store(why, std::memory_order_release);
  FailSends(s, why);
  if (s->connecting) {
    auto promise = std::move(s->connecting);
    promise->SetValue(TcpSocket(keep));
  } else {
    s->end = why;
    ReportEndIfDue(keep);
  }
  s->self.reset();
  AfterLwip();
}

void Attach(Conn* s, struct tcp_pcb* pcb) {
  s->pcb = pcb;
  tcp_arg(pcb, s);
  tcp_recv(pcb, Recv);
  tcp_sent(pcb, Sent);
  tcp_err(pcb, Err);
  tcp_poll(pcb, Poll, 1);  // every TCP coarse tick (500 ms)
}

void DoClose(Conn* s) {
  if (s->pcb == nullptr) return;
  struct tcp_pcb* pcb = s->pcb;
  // Detach first: lwIP may free the pcb inside tcp_close. Data that still
  // arrives is discarded by lwIP (tcp_recv_null).
  tcp_arg(pcb, nullptr);
  tcp_recv(pcb, nullptr);
  tcp_sent(pcb, nullptr);
  tcp_err(pcb, nullptr);
  tcp_poll(pcb, nullptr, 0);
  // Give back the window of data taken but not yet handed back: lwIP answers
  // a close with unread data by a reset, and a client that sent "quit" (and
  // was answered) must see a FIN after the answer, not a reset.
  for (; s->unrecved > 0; s->unrecved -= std::min<size_t>(s->unrecved, 0xFFFF)) {
    tcp_recved(pcb, u16_t(std::min<size_t>(s->unrecved, 0xFFFF)));
  }
  if (tcp_close(pcb) != ERR_OK) {
    Attach(s, pcb);  // out of memory for the FIN: the next poll tries again
    return;
  }
  ConnPtr keep = s->self;
  DropPcb(s);
  s->status.store(Status::kNotConnected, std::memory_order_release);
  s->self.reset();
}

void EnableDelivery(const ConnPtr& s) {
  if (s->delivering) return;
  s->delivering = true;
  for (struct pbuf* p : s->held) Deliver(s, p);
  s->held.clear();
  ReportEndIfDue(s);
  AfterLwip();
}

err_t Connected(void* arg, struct tcp_pcb* pcb, err_t) {
  auto* s = static_cast<Conn*>(arg);
  Attach(s, pcb);
  s->local = Local(pcb);
  s->remote = Remote(pcb);
  s->status.store(Status::kOk, std::memory_order_release);
  auto promise = std::move(s->connecting);
  promise->SetValue(TcpSocket(s->self));
  return ERR_OK;
}

err_t Accept(void* arg, struct tcp_pcb* pcb, err_t err) {
  auto* l = static_cast<TcpListener::State*>(arg);
  if (err != ERR_OK || pcb == nullptr || l == nullptr) return ERR_VAL;
  auto s = std::make_shared<Conn>();
  s->home = l->homes[l->next_home++ % l->homes.size()];
  s->self = s;
  s->local = Local(pcb);
  s->remote = Remote(pcb);
  s->status.store(Status::kOk, std::memory_order_relaxed);
  Attach(s.get(), pcb);
  Post(s->home, [listener = l->self, handler = l->on_accept, s] {
    if (listener->closed.load(std::memory_order_acquire) || !handler) {
      TcpSocket(s).Close();
      return;
    }
    (*handler)(TcpSocket(s));
  });
  return ERR_OK;
}

}  // namespace

// ---- TcpSocket ----

Future<TcpSocket> TcpSocket::Connect(Endpoint to) {
  auto s = std::make_shared<State>();
  s->home = core::Current();
  s->remote = to;
  auto promise = std::make_shared<Promise<TcpSocket>>();
  auto future = promise->GetFuture();
  RunOnStack([s, promise] {
    auto fail = [&](Status why) {
      s->status.store(why, std::memory_order_release);
      promise->SetValue(TcpSocket(s));
    };
    if (!Started()) return fail(Status::kNotStarted);
    struct tcp_pcb* pcb = tcp_new();
    if (pcb == nullptr) return fail(Status::kNoMemory);
    s->self = s;
    s->connecting = promise;
    tcp_arg(pcb, s.get());
    tcp_err(pcb, Err);
    ip_addr_t ip = ToLwip(s->remote.ip);
    err_t err = tcp_connect(pcb, &ip, s->remote.port, Connected);
    if (err != ERR_OK) {
      tcp_err(pcb, nullptr);
      tcp_close(pcb);  // never connected: frees it
      s->connecting.reset();
      s->self.reset();
      return fail(FromErr(err));
    }
    s->pcb = pcb;
    AfterLwip();
  });
  return future;
}

Status TcpSocket::status() const {
  return state_ ? state_->status.load(std::memory_order_acquire) : Status::kNotConnected;
}
Endpoint TcpSocket::local() const { return state_ ? state_->local : Endpoint{}; }
Endpoint TcpSocket::remote() const { return state_ ? state_->remote : Endpoint{}; }
size_t TcpSocket::Queued() const { return state_ ? state_->queued.load(std::memory_order_relaxed) : 0; }

void TcpSocket::OnReceive(ReceiveHandler handler) {
  if (!state_) return;
  Post(state_->home, [s = state_, h = std::move(handler)]() mutable {
    s->on_receive = std::move(h);
    RunOnStack([s] { EnableDelivery(s); });
  });
}

void TcpSocket::OnClose(CloseHandler handler) {
  if (!state_) return;
  Post(state_->home, [s = state_, h = std::move(handler)]() mutable {
    s->on_close = std::move(h);
    if (s->close_seen && !s->closed.load(std::memory_order_acquire)) s->on_close(s->close_status);
  });
}

Future<Status> TcpSocket::Send(const void* data, size_t length) {
  auto promise = std::make_shared<Promise<Status>>();
  auto future = promise->GetFuture();
  if (!state_) {
    promise->SetValue(Status::kNotConnected);
    return future;
  }
  std::vector<uint8_t> copy(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + length);
  state_->queued.fetch_add(length, std::memory_order_relaxed);
  RunOnStack([s = state_, copy = std::move(copy), promise]() mutable {
    if (s->pcb == nullptr || s->closing) {
      s->queued.fetch_sub(copy.size(), std::memory_order_relaxed);
      Status why = s->status.load(std::memory_order_relaxed);
      promise->SetValue(why == Status::kOk ? Status::kNotConnected : why);
      return;
    }
    s->sendq.push_back(State::PendingSend{std::move(copy), 0, std::move(promise)});
    PumpSend(s.get());
    AfterLwip();
  });
  return future;
}

void TcpSocket::Close() {
  if (!state_) return;
  if (state_->home == core::Current()) state_->closed.store(true, std::memory_order_release);
  RunOnStack([s = state_] {
    s->closed.store(true, std::memory_order_release);
    if (!s->closing) {
      s->closing = true;
      if (s->pcb == nullptr) {
        DropPcb(s.get());  // ended earlier: free what is held
        s->self.reset();
      } else {
        PumpSend(s.get());  // closes once the queue is in lwIP
      }
    }
    AfterLwip();
    // Handlers may hold handles to this socket: drop them on their core.
    Post(s->home, [s] {
      s->on_receive = nullptr;
      s->on_close = nullptr;
    });
  });
}

void TcpSocket::Abort() {
  if (!state_) return;
  if (state_->home == core::Current()) state_->closed.store(true, std::memory_order_release);
  RunOnStack([s = state_] {
    s->closed.store(true, std::memory_order_release);
    s->closing = true;
    if (s->pcb != nullptr) tcp_abort(s->pcb);  // calls Err(ERR_ABRT): sends fail, pcb dropped
    DropPcb(s.get());
    s->self.reset();
    AfterLwip();
    Post(s->home, [s] {
      s->on_receive = nullptr;
      s->on_close = nullptr;
    });
  });
}

// ---- TcpListener ----

Future<TcpListener> TcpListener::Listen(uint16_t port, AcceptHandler on_accept, std::vector<int> homes) {
  auto l = std::make_shared<State>();
  l->home = core::Current();
  l->homes = homes.empty() ? std::vector<int>{l->home} : std::move(homes);
  l->on_accept = std::make_shared<AcceptHandler>(std::move(on_accept));
  auto promise = std::make_shared<Promise<TcpListener>>();
  auto future = promise->GetFuture();
  RunOnStack([l, promise, port] {
    auto done = [&](Status status) {
      l->status.store(status, std::memory_order_release);
      promise->SetValue(TcpListener(l));
    };
    for (int home : l->homes) {
      if (home < 0 || home >= core::Online()) return done(Status::kInvalidArgument);
    }
    if (!Started()) return done(Status::kNotStarted);
    struct tcp_pcb* pcb = tcp_new();
    if (pcb == nullptr) return done(Status::kNoMemory);
    ip_set_option(pcb, SOF_REUSEADDR);
    if (err_t err = tcp_bind(pcb, IP_ANY_TYPE, port); err != ERR_OK) {
      tcp_close(pcb);
      return done(FromErr(err));
    }
    err_t err = ERR_OK;
    struct tcp_pcb* listening = tcp_listen_with_backlog_and_err(pcb, TCP_DEFAULT_LISTEN_BACKLOG, &err);
    if (listening == nullptr) {
      tcp_close(pcb);
      return done(FromErr(err));
    }
    l->pcb = listening;
    l->self = l;
    l->port.store(listening->local_port, std::memory_order_relaxed);
    tcp_arg(listening, l.get());
    tcp_accept(listening, Accept);
    done(Status::kOk);
  });
  return future;
}

Status TcpListener::status() const {
  if (!state_ || state_->closed.load(std::memory_order_acquire)) return Status::kNotConnected;
  return state_->status.load(std::memory_order_acquire);
}
uint16_t TcpListener::port() const { return state_ ? state_->port.load(std::memory_order_relaxed) : 0; }

void TcpListener::Close() {
  if (!state_) return;
  state_->closed.store(true, std::memory_order_release);
  RunOnStack([l = state_] {
    if (l->pcb != nullptr) {
      tcp_arg(l->pcb, nullptr);
      tcp_accept(l->pcb, nullptr);
      tcp_close(l->pcb);  // a listening pcb always closes
      l->pcb = nullptr;
    }
    l->self.reset();
    // Dropped on the listener's core, unless an accepted socket's event
    // still holds it.
    Post(l->home, [handler = std::move(l->on_accept)] {});
  });
}

}  // namespace fox::net
