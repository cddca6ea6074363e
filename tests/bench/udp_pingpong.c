// udp_pingpong: UDP round-trip times between two Linux machines, the
// baseline the am_rtt benchmark compares fox's active messages with.
//
//   udp_pingpong server PORT [IDLE_S]
//       echoes every datagram back to its sender; exits 0 on a datagram
//       starting with "bye", or 1 after IDLE_S seconds (default 120) without
//       traffic, so it always stops by itself.
//   udp_pingpong client HOST PORT COUNT [SIZE]
//       waits (up to 60 s) until the server answers, warms up with 20 round
//       trips, then times COUNT round trips of SIZE-byte datagrams (default
//       64), one outstanding at a time; a datagram not answered within 1 s
//       is counted lost and sent again. Prints
//         udp_pingpong: COUNT round trips of SIZE bytes: median M us mean A us min m us max x us lost L
//       and tells the server "bye".
//
// Built static by the benchmark (tests/bench/linux_udp_rtt.py) for the
// minimal Linux guest; plain C and POSIX, no other dependency.
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static uint64_t NowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int Usage(void) {
  fprintf(stderr,
          "usage: udp_pingpong server PORT [IDLE_S]\n"
          "       udp_pingpong client HOST PORT COUNT [SIZE]\n");
  return 2;
}

static int ParsePort(const char* s) {
  char* end;
  long v = strtol(s, &end, 10);
  return (*end || v <= 0 || v > 65535) ? -1 : (int)v;
}

static int Server(int port, int idle_s) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_in me = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_ANY)};
  if (fd < 0 || bind(fd, (struct sockaddr*)&me, sizeof me) < 0) {
    perror("udp_pingpong: server socket");
    return 1;
  }
  printf("udp_pingpong: server on port %d\n", port);
  fflush(stdout);
  char buf[65536];
  uint64_t echoed = 0;
  for (;;) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int n = poll(&p, 1, idle_s * 1000);
    if (n == 0) {
      printf("udp_pingpong: server idle for %d s after %llu echoes, giving up\n", idle_s,
             (unsigned long long)echoed);
      return 1;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      perror("udp_pingpong: poll");
      return 1;
    }
    struct sockaddr_in from;
    socklen_t from_len = sizeof from;
    ssize_t len = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr*)&from, &from_len);
    if (len < 0) continue;
    if (len >= 3 && memcmp(buf, "bye", 3) == 0) {
      printf("udp_pingpong: server echoed %llu datagrams\n", (unsigned long long)echoed);
      return 0;
    }
    if (sendto(fd, buf, (size_t)len, 0, (struct sockaddr*)&from, from_len) == len) ++echoed;
  }
}

// One round trip: 0 and *rtt_ns on an answer, -1 after timeout_ms.
static int RoundTrip(int fd, const struct sockaddr_in* to, char* msg, size_t size, uint32_t seq, int timeout_ms,
                     uint64_t* rtt_ns) {
  char reply[65536];
  memcpy(msg, &seq, sizeof seq);
  uint64_t t0 = NowNs();
  if (sendto(fd, msg, size, 0, (const struct sockaddr*)to, sizeof *to) != (ssize_t)size) return -1;
  for (;;) {
    int left = timeout_ms - (int)((NowNs() - t0) / 1000000);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (left <= 0 || poll(&p, 1, left) <= 0) return -1;
    ssize_t len = recv(fd, reply, sizeof reply, 0);
    // A late answer to an earlier (lost) try is skipped by its number.
    if (len == (ssize_t)size && memcmp(reply, msg, size) == 0) {
      *rtt_ns = NowNs() - t0;
      return 0;
    }
  }
}

static int CompareU64(const void* a, const void* b) {
  uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
  return x < y ? -1 : x > y;
}

static int Client(const char* host, int port, long count, long size) {
  struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
  if (inet_pton(AF_INET, host, &to.sin_addr) != 1) {
    fprintf(stderr, "udp_pingpong: %s is not an IPv4 address\n", host);
    return 2;
  }
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) {
    perror("udp_pingpong: socket");
    return 1;
  }
  char* msg = malloc((size_t)size);
  uint64_t* rtt = malloc(sizeof(uint64_t) * (size_t)count);
  if (!msg || !rtt) return 1;
  for (long i = 0; i < size; ++i) msg[i] = (char)('a' + i % 26);
  uint32_t seq = 0;
  uint64_t t;
  // The server's guest may still be booting: try for up to 60 s.
  int up = 0;
  for (int i = 0; i < 300 && !up; ++i) up = RoundTrip(fd, &to, msg, (size_t)size, ++seq, 200, &t) == 0;
  if (!up) {
    fprintf(stderr, "udp_pingpong: no answer from %s:%d within 60 s\n", host, port);
    return 1;
  }
  for (int i = 0; i < 20; ++i) RoundTrip(fd, &to, msg, (size_t)size, ++seq, 1000, &t);
  long lost = 0;
  for (long i = 0; i < count;) {
    if (RoundTrip(fd, &to, msg, (size_t)size, ++seq, 1000, &rtt[i]) == 0) {
      ++i;
    } else if (++lost > count) {
      fprintf(stderr, "udp_pingpong: more datagrams lost than sent, giving up\n");
      return 1;
    }
  }
  sendto(fd, "bye", 3, 0, (struct sockaddr*)&to, sizeof to);
  qsort(rtt, (size_t)count, sizeof rtt[0], CompareU64);
  double sum = 0;
  for (long i = 0; i < count; ++i) sum += (double)rtt[i];
  double median = count % 2 ? (double)rtt[count / 2] : ((double)rtt[count / 2 - 1] + (double)rtt[count / 2]) / 2;
  printf("udp_pingpong: %ld round trips of %ld bytes: median %.1f us mean %.1f us min %.1f us max %.1f us lost %ld\n",
         count, size, median / 1000, sum / (double)count / 1000, (double)rtt[0] / 1000,
         (double)rtt[count - 1] / 1000, lost);
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 3 && strcmp(argv[1], "server") == 0 && argc <= 4) {
    int port = ParsePort(argv[2]);
    int idle = argc == 4 ? atoi(argv[3]) : 120;
    if (port < 0 || idle <= 0) return Usage();
    return Server(port, idle);
  }
  if (argc >= 5 && strcmp(argv[1], "client") == 0 && argc <= 6) {
    int port = ParsePort(argv[3]);
    long count = strtol(argv[4], NULL, 10);
    long size = argc == 6 ? strtol(argv[5], NULL, 10) : 64;
    if (port < 0 || count < 1 || count > 10000000 || size < 4 || size > 65507) return Usage();
    return Client(argv[2], port, count, size);
  }
  return Usage();
}
