#include <cstring>

#include "vmtest.h"
#ifdef FOX_NATIVE
#include "net_tests.h"
#endif

namespace {
struct Test {
  const char* name;
  int (*run)(int, char**);
};
// Platform-neutral tests run on compute nodes and in the hosted build.
const Test kTests[] = {
    {"exceptions", vmtest::Exceptions},
    {"rtti", vmtest::Rtti},
    {"static_ctors", vmtest::StaticCtors},
    {"thread_local", vmtest::ThreadLocal},
    {"stdlib", vmtest::StdLib},
    {"exit_code", vmtest::ExitCode},
    {"cores", vmtest::Cores},
    {"spawn_storm", vmtest::SpawnStorm},
    {"event_mutex", vmtest::EventMutexTest},
    {"steal", vmtest::Steal},
    {"timers", vmtest::Timers},
    {"futures", vmtest::Futures},
    {"ebb", vmtest::Ebbs},
    {"sas", vmtest::Sas},
    {"escape_main", vmtest::EscapeMain},
    {"escape_event", vmtest::EscapeEvent},
#ifdef FOX_NATIVE
    // Hosted, sleep_for still blocks the whole thread (core).
    {"sleep", vmtest::Sleep},
    {"banner", vmtest::Banner},
    {"alloc_stress", vmtest::AllocStress},
    {"alloc_oom", vmtest::AllocOom},
    {"clock", vmtest::Clock},
    {"null_deref", vmtest::NullDeref},
    {"stack_overflow", vmtest::StackOverflow},
    {"terminate", vmtest::Terminate},
    {"app_quiet", vmtest::AppCoresQuiet},
    {"console_hold", vmtest::ConsoleHold},
    {"console_hold_exit", vmtest::ConsoleHoldExit},
    {"idle_wake", vmtest::IdleWake},
    {"event_stack_overflow", vmtest::EventStackOverflow},
    {"ebb_table", vmtest::EbbTableWindow},
    {"sas_readonly_write", vmtest::SasReadOnlyWrite},
    {"nic_arp", vmtest::NicArp},
    {"l2_exchange", vmtest::L2Exchange},
    {"replace_boot_args", vmtest::ReplaceBootArgs},
    {"net_dhcp", vmtest::NetDhcp},
    {"net_ping", vmtest::NetPing},
    {"net_static", vmtest::NetStatic},
    {"net_tcp_loopback", vmtest::NetTcpLoopback},
    {"net_tcp_backpressure", vmtest::NetTcpBackpressure},
    {"net_tcp_homes", vmtest::NetTcpHomes},
    {"net_udp_loopback", vmtest::NetUdpLoopback},
#endif
};
}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2) {
    for (const Test& t : kTests) {
      if (std::strcmp(argv[1], t.name) == 0) {
        int status = t.run(argc - 1, argv + 1);
        std::printf("vmtest %s: %s\n", t.name, status == 0 ? "PASS" : "FAIL");
        return status;
      }
    }
  }
  std::printf("usage: -- TEST [ARGS]; tests:");
  for (const Test& t : kTests) std::printf(" %s", t.name);
  std::printf("\n");
  return 2;
}
