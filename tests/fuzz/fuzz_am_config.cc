// Boot arguments (as FOX_ARGS text, checked as at start-up) through
// fox::am::ConfigFromBootArgs: fox.node, fox.job, fox.key, fox.amport,
// fox.aggregate, fox.peers, fox.probe_ms, fox.suspect_ms, fox.join_ms. It must return a configuration or an error,
// never crash or throw (an exception escaping here is a crash to libFuzzer),
// and a configuration it returns must be the one the arguments asked for.
#include <cstdint>
#include <cstring>
#include <string_view>

#include "fox/boot_args.h"
#include "fox/net/am.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const char* why = nullptr;
  if (!fox::SetBootArgsForTesting(text, &why).ok()) {
    if (why == nullptr || why[0] == '\0') __builtin_trap();
    return 0;
  }
  auto config = fox::am::ConfigFromBootArgs();
  if (!config.ok()) {
    if (config.error() != fox::Error::kInvalidArgument) __builtin_trap();
    return 0;
  }
  if (config->key_given != (fox::BootArg("fox.key") != nullptr)) __builtin_trap();
  if (config->self != fox::BootArgNumber("fox.node", 0)) __builtin_trap();
  if (config->job != fox::BootArgNumber("fox.job", 1) || config->job == 0) __builtin_trap();
  if (config->port == 0 || config->port != fox::BootArgNumber("fox.amport", fox::am::kDefaultPort)) __builtin_trap();
  if (const char* peers = fox::BootArg("fox.peers")) {
    // Accepted by ConfigFromBootArgs: am::Start and the apps parse it again.
    size_t count = 0;
    if (!fox::am::ParsePeers(peers, config->port,
                             [&](fox::NodeId, uint32_t, uint16_t port) {
                               if (port == 0) __builtin_trap();
                               ++count;
                             })
             .ok() ||
        count == 0) {
      __builtin_trap();
    }
  }
  // Channel windows: equal (every node of the job counts the same peers) and sane.
  const auto& ch = config->tuning.channel;
  if (ch.send_window != ch.recv_window || ch.send_window < 8 || ch.send_window > 128) __builtin_trap();
  // The membership's timers: as asked, and a probe's direct wait inside its period.
  const fox::net::MembershipConfig& m = config->tuning.membership;
  if (fox::BootArg("fox.probe_ms") != nullptr &&
      m.probe_period_ns != fox::BootArgNumber("fox.probe_ms", 0) * 1'000'000) {
    __builtin_trap();
  }
  if (m.probe_timeout_ns == 0 || m.probe_timeout_ns >= m.probe_period_ns) __builtin_trap();
  if (m.suspicion_ns != fox::BootArgNumber("fox.suspect_ms", 1000) * 1'000'000) __builtin_trap();
  if (m.join_timeout_ns != fox::BootArgNumber("fox.join_ms", 60'000) * 1'000'000) __builtin_trap();
  return 0;
}
