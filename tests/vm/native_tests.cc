// Tests that only make sense on a compute node (device interrupts).
#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include "fox/boot_args.h"
#include "fox/console.h"
#include "fox/clock.h"
#include "fox/core.h"
#include "fox/nic.h"
#include "fox/future.h"
#include "fox/timer.h"
#include "vmtest.h"
#include "x86_64/rtc.h"
#include "x86_64/serial.h"

namespace vmtest {

// serial::HoldFor, the boot banner's rule, with core 1 as the holder: what
// core 0 writes meanwhile comes out after core 1's line, in order, and costs
// core 0 no wait up to 4 KiB; a longer write waits until the release (not
// the 1 s bound).
int ConsoleHold(int, char**) {
  CHECK(fox::core::Online() >= 2);
  static std::atomic<uint64_t> released{0};  // when core 1 released the console
  fox::serial::HoldFor(1);
  auto holder = Start(1, [] {
    uint64_t until = fox::clock::NowNs() + 100000000;  // 100 ms: core 0 writes meanwhile
    while (fox::clock::NowNs() < until) {
    }
    const char line[] = "console_hold: the holder's line\n";
    fox::console::Write(line, sizeof line - 1);
    released.store(fox::clock::NowNs());
    fox::serial::Release();
  });
  uint64_t t0 = fox::clock::NowNs();
  const char held[] = "console_hold: core 0, held back\n";
  CHECK(write(1, held, sizeof held - 1) == ssize_t(sizeof held - 1));
  uint64_t held_end = fox::clock::NowNs();
  std::string big = "console_hold: core 0, " + std::string(5000, 'x') + "\n";
  CHECK(write(1, big.data(), big.size()) == ssize_t(big.size()));
  uint64_t big_end = fox::clock::NowNs();
  holder.Block();
  uint64_t release = released.load();
  std::printf("console_hold: held write %llu us, long write waited %llu ms, until %llu us after the release\n",
              (unsigned long long)((held_end - t0) / 1000), (unsigned long long)((big_end - t0) / 1000000),
              (unsigned long long)(big_end > release ? (big_end - release) / 1000 : 0));
  // Orders, not durations: they hold however long the host stalls the
  // emulated machine. The held write is kept, not waited for: it returned
  // before core 1 released the console; the long one waited for the
  // release, not for the 1 s bound.
  CHECK(release != 0 && held_end < release);
  CHECK(big_end >= release && big_end - release < 500000000);
  return 0;
}

// The program ends while core 1 still holds the console: nothing it kept
// back is lost (the power-off waits for the release).
int ConsoleHoldExit(int, char**) {
  CHECK(fox::core::Online() >= 2);
  fox::serial::HoldFor(1);
  Start(1, [] {
    uint64_t until = fox::clock::NowNs() + 100000000;
    while (fox::clock::NowNs() < until) {
    }
    const char line[] = "console_hold_exit: the holder's line\n";
    fox::console::Write(line, sizeof line - 1);
    fox::serial::Release();
  });
  const char held[] = "console_hold_exit: core 0's last line\n";
  CHECK(write(1, held, sizeof held - 1) == ssize_t(sizeof held - 1));
  std::exit(0);
}

// Device (RTC, 1024 Hz) and timer interrupts on the kernel core for
// `ms` milliseconds: the application cores must take none.
int AppCoresQuiet(int argc, char** argv) {
  uint64_t ms = argc > 1 ? std::atoi(argv[1]) : 300;
  int n = fox::core::Online();
  std::vector<uint64_t> before(n);
  for (int c = 0; c < n; ++c) before[c] = fox::core::InterruptCount(c);
  CHECK(fox::rtc::StartPeriodicInterrupt(6).ok());
  auto timer_runs = std::make_shared<int>(0);
  auto periodic = fox::timer::StartPeriodic(1000000, [timer_runs] { ++*timer_runs; });
  fox::Promise<void> p;
  auto f = p.GetFuture();
  auto shared = std::make_shared<fox::Promise<void>>(std::move(p));
  fox::timer::Start(ms * 1000000, [shared] { shared->SetValue(); });
  f.Block();
  fox::timer::Cancel(periodic);
  fox::rtc::StopPeriodicInterrupt();
  uint64_t ticks = fox::rtc::Ticks();
  std::printf("device interrupts: %llu RTC ticks; %d timer callbacks on core 0\n", (unsigned long long)ticks,
              *timer_runs);
  CHECK(ticks > ms / 4);
  for (int c = 0; c < n; ++c) {
    uint64_t taken = fox::core::InterruptCount(c) - before[c];
    std::printf("core %d (%s): %llu interrupts\n", c, fox::core::IsKernelCore(c) ? "kernel" : "application",
                (unsigned long long)taken);
    if (fox::core::IsKernelCore(c)) {
      if (c == 0) CHECK(taken >= ticks);
    } else {
      CHECK(fox::core::InterruptCount(c) == 0);  // ever, not just in this window
    }
  }
  return 0;
}

namespace {
std::atomic<bool> g_arp_reply{false};
uint8_t g_gateway_mac[6];
std::atomic<uint64_t> g_frames_seen{0};

// Receive handler: interrupt level, no allocation.
void OnFrame(const uint8_t* f, size_t len, void*) {
  g_frames_seen.fetch_add(1, std::memory_order_relaxed);
  if (len < 42 || f[12] != 0x08 || f[13] != 0x06) return;  // ARP
  bool reply = f[20] == 0 && f[21] == 2;
  bool from_gateway = f[28] == 10 && f[29] == 0 && f[30] == 2 && f[31] == 2;
  if (reply && from_gateway && !g_arp_reply.load()) {
    std::memcpy(g_gateway_mac, f + 22, 6);
    g_arp_reply.store(true, std::memory_order_release);
  }
}

void SleepMs(uint64_t ms) {
  fox::Promise<void> p;
  auto f = p.GetFuture();
  auto shared = std::make_shared<fox::Promise<void>>(std::move(p));
  fox::timer::Start(ms * 1000000, [shared] { shared->SetValue(); });
  f.Block();
}
}  // namespace

// The NIC end to end, against QEMU's user-mode network (its gateway
// 10.0.2.2 answers ARP): transmit, MSI-X receive interrupt, receive handler.
int NicArp(int, char**) {
  // The first use starts the NICs (fox/nic.h): asked on every core at once,
  // one core starts them, the others wait, and all see the same count.
  auto counts = RunOnEveryCore([] { return fox::nic::Count(); });
  for (int count : counts) CHECK(count == counts[0]);
  CHECK(fox::nic::Count() >= 1);
  fox::nic::Nic* nic = fox::nic::Get(0);
  nic->SetRxHandler(OnFrame, nullptr);
  auto mac = nic->Mac();
  uint8_t frame[42] = {};
  std::memset(frame, 0xFF, 6);  // broadcast
  std::memcpy(frame + 6, mac.data(), 6);
  frame[12] = 0x08, frame[13] = 0x06;                          // ARP
  frame[14] = 0, frame[15] = 1;                                // Ethernet
  frame[16] = 0x08, frame[17] = 0x00;                          // IPv4
  frame[18] = 6, frame[19] = 4, frame[20] = 0, frame[21] = 1;  // request
  std::memcpy(frame + 22, mac.data(), 6);
  const uint8_t me[4] = {10, 0, 2, 15}, gateway[4] = {10, 0, 2, 2};
  std::memcpy(frame + 28, me, 4);
  std::memcpy(frame + 38, gateway, 4);
  // Oversized frames are refused, not sent.
  static uint8_t huge[2000];
  CHECK(nic->Send(huge, sizeof huge).error() == fox::Error::kInvalidArgument);
  for (int attempt = 0; attempt < 20 && !g_arp_reply.load(); ++attempt) {
    CHECK(nic->Send(frame, sizeof frame).ok());
    for (int i = 0; i < 50 && !g_arp_reply.load(); ++i) SleepMs(2);
  }
  CHECK(g_arp_reply.load());
  auto s = nic->GetStats();
  std::printf(
      "nic: gateway 10.0.2.2 is at %02x:%02x:%02x:%02x:%02x:%02x; rx %llu tx %llu (dropped %llu), %llu interrupts\n",
      g_gateway_mac[0], g_gateway_mac[1], g_gateway_mac[2], g_gateway_mac[3], g_gateway_mac[4], g_gateway_mac[5],
      (unsigned long long)s.rx_packets, (unsigned long long)s.tx_packets, (unsigned long long)s.tx_dropped,
      (unsigned long long)s.interrupts);
  CHECK(s.rx_packets >= 1 && s.tx_packets >= 1 && s.tx_dropped == 1 && s.interrupts >= 1);
  // A burst larger than the transmit ring: the ring recycles, nothing hangs.
  int sent = 0;
  for (int i = 0; i < 2000; ++i) {
    if (nic->Send(frame, sizeof frame).ok()) ++sent;
    if (i % 100 == 0) SleepMs(1);
  }
  std::printf("nic: burst of 2000 frames, %d accepted\n", sent);
  CHECK(sent > 0);
  return 0;
}

namespace {
// L2 test: every node broadcasts a marker frame (EtherType 0x88B5, local
// experimental) naming itself; each records whom it heard.
std::atomic<uint32_t> g_heard{0};
void OnMarker(const uint8_t* f, size_t len, void*) {
  if (len >= 20 && f[12] == 0x88 && f[13] == 0xB5 && std::memcmp(f + 14, "fox-l2", 6) == 0 && len >= 21) {
    g_heard.fetch_or(1u << (f[20] & 31), std::memory_order_relaxed);
  }
}
}  // namespace

int L2Exchange(int argc, char** argv) {
  int nodes = argc > 1 ? std::atoi(argv[1]) : 2;
  int me = int(fox::BootArgNumber("fox.node", 0));
  fox::nic::Nic* nic = fox::nic::Get(0);
  CHECK(nic != nullptr && nodes <= 32);
  nic->SetRxHandler(OnMarker, nullptr);
  uint8_t frame[60] = {};
  std::memset(frame, 0xFF, 6);
  auto mac = nic->Mac();
  std::memcpy(frame + 6, mac.data(), 6);
  frame[12] = 0x88, frame[13] = 0xB5;
  std::memcpy(frame + 14, "fox-l2", 6);
  frame[20] = uint8_t(me);
  uint32_t everyone = (nodes == 32 ? 0xFFFFFFFFu : (1u << nodes) - 1) & ~(1u << me);
  // Keep announcing for a while after hearing everyone, so late nodes hear us.
  int extra = 0;
  for (int round = 0; round < 1500 && extra < 100; ++round) {
    (void)nic->Send(frame, sizeof frame);
    SleepMs(10);
    if ((g_heard.load() & everyone) == everyone) ++extra;
  }
  std::printf("l2: node %d heard %#x of %#x\n", me, g_heard.load() & everyone, everyone);
  CHECK((g_heard.load() & everyone) == everyone);
  return 0;
}

}  // namespace vmtest

namespace vmtest {

// fox::ReplaceBootArgs, what a pool node's agent uses to take a job without a
// reboot: the new arguments are in force, main's argv is theirs, earlier
// pointers stay valid; an argument applied at boot may not change, and bad
// syntax is refused; the arguments in force stay as they were then.
// Booted with: fox.job=3 fox.kcores=1 -- replace_boot_args
int ReplaceBootArgs(int, char**) {
  const char* job_before = fox::BootArg("fox.job");
  CHECK(job_before != nullptr && std::strcmp(job_before, "3") == 0);
  const char* why = nullptr;
  CHECK(!fox::ReplaceBootArgs("fox.job=4 fox.kcores=2 -- x", &why).ok());
  std::printf("replace: refused: %s\n", why);
  CHECK(std::strstr(why, "fox.kcores=2") != nullptr);
  CHECK(!fox::ReplaceBootArgs("fox.job=4 fox.node=5 fox.kcores=1", &why).ok());
  std::printf("replace: refused: %s\n", why);
  CHECK(std::strstr(why, "fox.node=5") != nullptr);
  CHECK(!fox::ReplaceBootArgs("fox.job=4 fox.bogus=1", &why).ok());
  std::printf("replace: refused: %s\n", why);
  CHECK(std::strcmp(fox::BootArg("fox.job"), "3") == 0);  // nothing changed
  CHECK(fox::ReplaceBootArgs("fox.job=7 fox.kcores=1 fox.app=ring fox.log=debug -- a bb", &why).ok());
  CHECK(std::strcmp(fox::BootArg("fox.job"), "7") == 0 && std::strcmp(fox::BootArg("fox.app"), "ring") == 0);
  CHECK(std::strcmp(job_before, "3") == 0);  // the old arguments are kept
  CHECK(fox::AppArgc() == 3 && std::strcmp(fox::AppArgv()[1], "a") == 0 && std::strcmp(fox::AppArgv()[2], "bb") == 0 &&
        fox::AppArgv()[3] == nullptr);
  std::printf("replace: fox.job=%s fox.app=%s, main gets %d arguments: %s %s\n", fox::BootArg("fox.job"),
              fox::BootArg("fox.app"), fox::AppArgc(), fox::AppArgv()[1], fox::AppArgv()[2]);
  return 0;
}

}  // namespace vmtest
