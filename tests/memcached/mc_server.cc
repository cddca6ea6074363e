// Test scaffolding, not fox's memcached server: a plain Linux poll() TCP
// server on 127.0.0.1 that serves the memcached protocol (apps/memcached)
// over one LocalStore, so that stock clients (memccapable, pymemcache) can
// check the protocol layer. Usage: mc_server PORT (0: any free port). It
// prints "listening on PORT" once it accepts connections, and runs until
// killed.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fox/memcached/local_store.h"
#include "fox/memcached/session.h"

namespace {

using fox::memcached::Counters;
using fox::memcached::LocalStore;
using fox::memcached::Session;

struct Client {
  explicit Client(const Session::Options& options) : session(options) {}
  Session session;
  std::string unfed;  // read from the socket, not yet taken by the session
  bool peer_closed = false;
};

// Moves bytes between the socket and the session until neither can make
// progress. Returns false when the connection is to be closed.
bool Serve(int fd, Client& c, LocalStore& store) {
  for (;;) {
    bool progress = false;
    if (!c.unfed.empty()) {
      size_t n = c.session.Feed(c.unfed.data(), c.unfed.size());
      c.unfed.erase(0, n);
      progress |= n > 0;
    }
    c.session.Run(store, std::time(nullptr));
    while (!c.session.Output().empty()) {
      std::string_view out = c.session.Output();
      ssize_t n = send(fd, out.data(), out.size(), MSG_NOSIGNAL);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n <= 0) return false;
      c.session.Consume(static_cast<size_t>(n));
      progress = true;
    }
    if (c.session.closing() && c.session.Output().empty()) return false;
    if (c.peer_closed && c.unfed.empty() && c.session.Output().empty()) return false;
    if (!progress) return true;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s PORT\n", argv[0]);
    return 2;
  }
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::atoi(argv[1])));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(listener, 64) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::perror("mc_server: bind/listen");
    return 1;
  }
  std::printf("listening on %u\n", ntohs(addr.sin_port));
  std::fflush(stdout);

  Counters counters;
  counters.start_time = std::time(nullptr);
  Session::Options options;
  options.counters = &counters;
  LocalStore store;
  std::map<int, std::unique_ptr<Client>> clients;
  std::vector<char> buffer(64 << 10);
  for (;;) {
    std::vector<pollfd> fds{{listener, POLLIN, 0}};
    for (auto& [fd, c] : clients) {
      short events = 0;
      if (c->unfed.empty() && !c->peer_closed) events |= POLLIN;
      if (!c->session.Output().empty()) events |= POLLOUT;
      fds.push_back({fd, events, 0});
    }
    if (poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) {
      std::perror("mc_server: poll");
      return 1;
    }
    if (fds[0].revents & POLLIN) {
      int fd;
      while ((fd = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK)) >= 0) {
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        clients.emplace(fd, std::make_unique<Client>(options));
      }
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      int fd = fds[i].fd;
      Client& c = *clients.at(fd);
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t n = recv(fd, buffer.data(), buffer.size(), 0);
        if (n > 0) {
          c.unfed.append(buffer.data(), static_cast<size_t>(n));
        } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
          c.peer_closed = true;
        }
      }
      if (!Serve(fd, c, store)) {
        close(fd);
        clients.erase(fd);
      }
    }
  }
}
