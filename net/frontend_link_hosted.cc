// The frontend link of a hosted place 0 (frontend_link.h). Notices from
// the frontend (DESIGN.md "Frontend and jobs": when a node's QEMU exits,
// the supervisor tells the job at once).
// `fox run` starts place 0 with FOX_NOTICE_FD naming the read end of a pipe;
// the frontend writes one line per notice:
//     dead N      node N is gone: am::NotifyDead(N) tells the whole job
//     status      report the nodes' status (OnStatusRequest's handler)
// The transport core watches the pipe like the AM socket (an interrupt
// trigger fired from the epoll loop, drained in an event). Unknown or
// malformed lines are logged and ignored; end of file (the frontend went
// away) closes the pipe, which leaves the epoll set with it.
//
// Requests the other way: FOX_CONTROL_FD names the write end of a pipe the
// frontend reads; one line each (Tell):
//     add N       start N more nodes in this job (RequestNodes)
//     status N\tKEY VALUE\t...   node N's status report (ebb/messenger.cc)
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "fox/cmdline.h"
#include "fox/event.h"
#include "fox/hosted.h"
#include "fox/log.h"
#include "fox/net/am.h"
#include "fox/net/frontend_link.h"
#include "fox/spinlock.h"

namespace fox::frontend {
namespace {

int g_notice_fd = -1;
event::InterruptTrigger* g_notice_rx = nullptr;
std::string g_partial;  // the transport core only
SpinLock g_status_lock;
std::shared_ptr<Function<void()>> g_status_handler GUARDED_BY(g_status_lock);

void OnNotice(std::string_view line) {
  if (line == "status") {
    std::shared_ptr<Function<void()>> handler;
    {
      SpinGuard g(g_status_lock);
      handler = g_status_handler;
    }
    if (handler) (*handler)();
    return;
  }
  if (line.substr(0, 5) == "dead ") {
    auto n = ParseUInt(line.substr(5));
    if (n.ok() && *n <= 0x7FFFFFFF) {
      LOG_INFO("am: the frontend says node %llu died", (unsigned long long)*n);
      am::NotifyDead(NodeId(*n));
      return;
    }
  }
  LOG_WARN("am: ignoring a bad notice from the frontend: '%.*s'", int(line.size()), line.data());
}

void DrainNotices() {
  if (!am::Started()) {  // Start has not finished yet: come back once it has
    event::Spawn([] { DrainNotices(); });
    return;
  }
  g_notice_rx->Arm();
  char buf[512];
  for (;;) {
    ssize_t n = read(g_notice_fd, buf, sizeof buf);
    if (n > 0) {
      g_partial.append(buf, size_t(n));
      size_t eol;
      while ((eol = g_partial.find('\n')) != std::string::npos) {
        OnNotice(std::string_view(g_partial).substr(0, eol));
        g_partial.erase(0, eol + 1);
      }
      continue;
    }
    if (n == 0) {  // the frontend closed its end
      close(g_notice_fd);
      g_notice_fd = -1;
    }
    return;  // EAGAIN: drained
  }
}

void OnNoticeReadable(void*) { g_notice_rx->Fire(); }

}  // namespace

void internal::WatchNotices(int core) {
  const char* env = std::getenv("FOX_NOTICE_FD");
  if (env == nullptr || *env == '\0') return;
  auto fd = ParseUInt(env);
  if (!fd.ok() || *fd > 1 << 20 || fcntl(int(*fd), F_GETFD) < 0) {
    LOG_WARN("am: FOX_NOTICE_FD=%s is not an open descriptor: no notices from the frontend", env);
    return;
  }
  g_notice_fd = int(*fd);
  fcntl(g_notice_fd, F_SETFL, fcntl(g_notice_fd, F_GETFL) | O_NONBLOCK);
  fcntl(g_notice_fd, F_SETFD, FD_CLOEXEC);
  g_notice_rx = new event::InterruptTrigger(core, [] { DrainNotices(); });
  event::SpawnRemote(core, [] { DrainNotices(); });  // arms the trigger on its core
  if (!hosted::WatchReadable(core, g_notice_fd, OnNoticeReadable, nullptr)) {
    LOG_WARN("am: cannot watch FOX_NOTICE_FD: no notices from the frontend");
  }
}

void OnStatusRequest(Function<void()> handler) {
  auto shared = handler ? std::make_shared<Function<void()>>(std::move(handler)) : nullptr;
  SpinGuard g(g_status_lock);
  g_status_handler.swap(shared);  // the old one is freed after the lock
}

Result<void> Tell(std::string_view line) {
  if (line.empty() || line.size() > 4000 || line.find('\n') != std::string_view::npos) return Error::kInvalidArgument;
  const char* env = std::getenv("FOX_CONTROL_FD");
  if (env == nullptr || *env == '\0') return Error::kUnsupported;
  auto fd = ParseUInt(env);
  if (!fd.ok() || *fd > 1 << 20) return Error::kUnsupported;
  std::string whole(line);
  whole += '\n';
  ssize_t n = write(int(*fd), whole.data(), whole.size());     // under PIPE_BUF: one piece
  if (n != ssize_t(whole.size())) return Error::kUnsupported;  // the frontend went away
  return Ok();
}

Result<void> RequestNodes(uint32_t count) {
  if (count == 0 || count > 64) return Error::kInvalidArgument;
  FOX_TRY(Tell("add " + std::to_string(count)));
  LOG_INFO("am: asked the frontend for %u more nodes", count);
  return Ok();
}

}  // namespace fox::frontend
