// mc_load: a memcached load generator for make bench B=dht (memcslap prints
// no latencies). CONNS connections, one thread each, each with one request
// outstanding (text protocol, or binary: memcached's binary protocol), first
// a set phase over KEYS keys, then a get phase of random keys, each SECONDS
// long. Prints per phase
//   mc_load: PROTOCOL set|get OPS ops in S s: R ops/s p50 X us p99 Y us errors E misses M
// and exits 1 if a connection fails. The server is the system under test;
// this runs on the host, in the benchmark's network namespace.
//
//   mc_load HOST[,HOST...] PORT CONNS SECONDS KEYS VALUE_BYTES [text|binary]
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { kMaxConns = 256, kMaxSamples = 1 << 20, kMaxHosts = 16 };

static const char* g_hosts[kMaxHosts];
static int g_host_count, g_port, g_conns, g_keys, g_value_bytes;
static double g_seconds;
static volatile int g_phase;  // 0: set, 1: get
static int g_binary;

struct Worker {
  pthread_t thread;
  int index;
  uint64_t ops, errors, misses;
  uint32_t* samples;  // latencies in us
  size_t sample_count;
  int failed;
};

static double Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static int Connect(const char* host) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g_port)};
  int one = 1;
  if (fd < 0 || inet_pton(AF_INET, host, &a.sin_addr) != 1) return -1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  struct timeval tv = {.tv_sec = 30};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (connect(fd, (struct sockaddr*)&a, sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static int SendAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

// Reads until the buffer ends with `end` (a whole reply); returns its length or -1.
static ssize_t ReadReply(int fd, char* buf, size_t cap, const char* end) {
  size_t got = 0, end_length = strlen(end);
  for (;;) {
    ssize_t k = recv(fd, buf + got, cap - got - 1, 0);
    if (k <= 0) return -1;
    got += (size_t)k;
    buf[got] = 0;
    if (got >= end_length && memcmp(buf + got - end_length, end, end_length) == 0) return (ssize_t)got;
    if (got + 1 >= cap) return -1;
  }
}

// Binary protocol: a request of `opcode` (0x00 get, 0x01 set: flags and
// expiry 0) for `key`, into `out`; its length.
static size_t BinaryRequest(char* out, uint8_t opcode, const char* key, const char* value, size_t value_length) {
  size_t key_length = strlen(key), extras = opcode == 0x01 ? 8 : 0;
  uint32_t body = (uint32_t)(extras + key_length + value_length);
  memset(out, 0, 24 + extras);
  out[0] = (char)0x80;
  out[1] = (char)opcode;
  out[2] = (char)(key_length >> 8);
  out[3] = (char)key_length;
  out[4] = (char)extras;
  out[8] = (char)(body >> 24);
  out[9] = (char)(body >> 16);
  out[10] = (char)(body >> 8);
  out[11] = (char)body;
  memcpy(out + 24 + extras, key, key_length);
  memcpy(out + 24 + extras + key_length, value, value_length);
  return 24 + body;
}

// Reads one binary response; its status (0 ok, 1 not found, ...), or -1.
static int ReadBinaryReply(int fd, char* buf, size_t cap) {
  size_t got = 0, want = 24;
  while (got < want) {
    ssize_t k = recv(fd, buf + got, want - got, 0);
    if (k <= 0) return -1;
    got += (size_t)k;
    if (got == 24 && want == 24) {
      if ((uint8_t)buf[0] != 0x81) return -1;
      want = 24 + (((uint32_t)(uint8_t)buf[8] << 24) | ((uint32_t)(uint8_t)buf[9] << 16) |
                   ((uint32_t)(uint8_t)buf[10] << 8) | (uint8_t)buf[11]);
      if (want > cap) return -1;
    }
  }
  return ((uint8_t)buf[6] << 8) | (uint8_t)buf[7];
}

static void* Run(void* arg) {
  struct Worker* w = arg;
  const char* host = g_hosts[w->index % g_host_count];
  int fd = Connect(host);
  if (fd < 0) {
    fprintf(stderr, "mc_load: connection %d to %s: cannot connect: %s\n", w->index, host, strerror(errno));
    w->failed = 1;
    return NULL;
  }
  size_t cap = (size_t)g_value_bytes + 512;
  char* request = malloc(cap);
  char* reply = malloc(cap);
  char* value = malloc((size_t)g_value_bytes + 1);
  memset(value, 'v', (size_t)g_value_bytes);
  value[g_value_bytes] = 0;
  unsigned seed = (unsigned)w->index * 7919u + 1;
  int phase = g_phase;
  int key = w->index;
  while (g_phase == phase && g_binary) {
    char name[32];
    snprintf(name, sizeof name, "key:%08d", phase == 0 ? key % g_keys : (int)(rand_r(&seed) % (unsigned)g_keys));
    if (phase == 0) key += g_conns;
    size_t n = BinaryRequest(request, phase == 0 ? 0x01 : 0x00, name, value, phase == 0 ? (size_t)g_value_bytes : 0);
    double t0 = Now();
    int status = SendAll(fd, request, n) != 0 ? -1 : ReadBinaryReply(fd, reply, cap);
    if (status < 0) {
      fprintf(stderr, "mc_load: connection %d to %s failed after %llu binary %s requests: %s\n", w->index, host,
              (unsigned long long)w->ops, phase == 0 ? "set" : "get", errno ? strerror(errno) : "closed");
      w->failed = 1;
      break;
    }
    double us = (Now() - t0) * 1e6;
    if (status == 1 && phase == 1) {
      ++w->misses;
    } else if (status != 0) {
      ++w->errors;
    }
    ++w->ops;
    if (w->sample_count < kMaxSamples) w->samples[w->sample_count++] = us > 4e9 ? 4000000000u : (uint32_t)us;
  }
  while (g_phase == phase && !g_binary) {
    int n;
    const char* end;
    if (phase == 0) {
      n = snprintf(request, cap, "set key:%08d 0 0 %d\r\n%s\r\n", key % g_keys, g_value_bytes, value);
      key += g_conns;
      end = "\r\n";
    } else {
      n = snprintf(request, cap, "get key:%08d\r\n", (int)(rand_r(&seed) % (unsigned)g_keys));
      end = "END\r\n";
    }
    double t0 = Now();
    if (SendAll(fd, request, (size_t)n) != 0 || ReadReply(fd, reply, cap, end) < 0) {
      fprintf(stderr, "mc_load: connection %d to %s failed after %llu %s requests: %s\n", w->index, host,
              (unsigned long long)w->ops, phase == 0 ? "set" : "get", errno ? strerror(errno) : "closed");
      w->failed = 1;
      break;
    }
    double us = (Now() - t0) * 1e6;
    if (phase == 0 && strcmp(reply, "STORED\r\n") != 0) ++w->errors;
    if (phase == 1 && strncmp(reply, "VALUE ", 6) != 0) {
      if (strcmp(reply, "END\r\n") == 0) {
        ++w->misses;
      } else {
        ++w->errors;
      }
    }
    ++w->ops;
    if (w->sample_count < kMaxSamples) w->samples[w->sample_count++] = us > 4e9 ? 4000000000u : (uint32_t)us;
  }
  close(fd);
  free(request);
  free(reply);
  free(value);
  return NULL;
}

static int Compare(const void* a, const void* b) {
  uint32_t x = *(const uint32_t*)a, y = *(const uint32_t*)b;
  return x < y ? -1 : x > y;
}

static int Phase(struct Worker* workers, int phase) {
  g_phase = phase;
  for (int i = 0; i < g_conns; ++i) {
    struct Worker* w = &workers[i];
    w->ops = w->errors = w->misses = 0;
    w->sample_count = 0;
    w->index = i;
    if (pthread_create(&w->thread, NULL, Run, w) != 0) return 1;
  }
  double t0 = Now();
  while (Now() - t0 < g_seconds) usleep(10000);
  g_phase = 2 + phase;  // stops the workers after their current request
  uint64_t ops = 0, errors = 0, misses = 0;
  size_t samples = 0;
  int failed = 0;
  for (int i = 0; i < g_conns; ++i) {
    pthread_join(workers[i].thread, NULL);
    ops += workers[i].ops;
    errors += workers[i].errors;
    misses += workers[i].misses;
    samples += workers[i].sample_count;
    failed |= workers[i].failed;
  }
  double took = Now() - t0;
  uint32_t* all = malloc((samples + 1) * sizeof *all);
  size_t at = 0;
  for (int i = 0; i < g_conns; ++i) {
    memcpy(all + at, workers[i].samples, workers[i].sample_count * sizeof *all);
    at += workers[i].sample_count;
  }
  qsort(all, samples, sizeof *all, Compare);
  uint32_t p50 = samples ? all[samples / 2] : 0, p99 = samples ? all[samples * 99 / 100] : 0;
  printf("mc_load: %s %s %llu ops in %.2f s: %.0f ops/s p50 %u us p99 %u us errors %llu misses %llu\n",
         g_binary ? "binary" : "text", phase == 0 ? "set" : "get", (unsigned long long)ops, took, ops / took, p50, p99, (unsigned long long)errors,
         (unsigned long long)misses);
  fflush(stdout);
  free(all);
  return failed;
}

int main(int argc, char** argv) {
  if (argc != 7 && argc != 8) {
    fprintf(stderr, "usage: mc_load HOST[,HOST...] PORT CONNS SECONDS KEYS VALUE_BYTES [text|binary]\n");
    return 2;
  }
  if (argc == 8 && strcmp(argv[7], "text") != 0 && strcmp(argv[7], "binary") != 0) {
    fprintf(stderr, "mc_load: the protocol is text or binary, not %s\n", argv[7]);
    return 2;
  }
  g_binary = argc == 8 && strcmp(argv[7], "binary") == 0;
  char* hosts = strdup(argv[1]);
  for (char* h = strtok(hosts, ","); h && g_host_count < kMaxHosts; h = strtok(NULL, ",")) g_hosts[g_host_count++] = h;
  g_port = atoi(argv[2]);
  g_conns = atoi(argv[3]);
  g_seconds = atof(argv[4]);
  g_keys = atoi(argv[5]);
  g_value_bytes = atoi(argv[6]);
  if (g_host_count == 0 || g_port <= 0 || g_conns < 1 || g_conns > kMaxConns || g_seconds <= 0 || g_keys < 1 ||
      g_value_bytes < 1 || g_value_bytes > (1 << 20)) {
    fprintf(stderr, "mc_load: bad arguments\n");
    return 2;
  }
  struct Worker* workers = calloc((size_t)g_conns, sizeof *workers);
  for (int i = 0; i < g_conns; ++i) workers[i].samples = malloc(kMaxSamples * sizeof(uint32_t));
  int failed = Phase(workers, 0);
  failed |= Phase(workers, 1);
  if (failed) fprintf(stderr, "mc_load: a connection failed\n");
  return failed ? 1 : 0;
}
