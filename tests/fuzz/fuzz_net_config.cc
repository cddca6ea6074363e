// Boot arguments (as FOX_ARGS text, checked as at start-up) through
// fox::net::ConfigFromBootArgs (net/lwip/config.cc): fox.ip, fox.gw. A
// configuration or an error, never a crash or an exception; a static
// configuration is the address and prefix that were given.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "fox/boot_args.h"
#include "fox/net/ip.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const char* why = nullptr;
  if (!fox::SetBootArgsForTesting(text, &why).ok()) {
    if (why == nullptr || why[0] == '\0') __builtin_trap();
    return 0;
  }
  auto config = fox::net::ConfigFromBootArgs();
  if (!config.ok()) {
    if (config.error() != fox::Error::kInvalidArgument) __builtin_trap();
    return 0;
  }
  const char* ip = fox::BootArg("fox.ip");
  if (config->dhcp != (ip == nullptr)) __builtin_trap();
  if (ip != nullptr) {
    std::string given(ip);
    std::string address = config->address.ToString();
    if (given.compare(0, given.find('/'), address) != 0) {
      // Leading zeros ("010.0.0.1") are the only other spelling.
      auto again = fox::net::Ipv4::Parse(given.substr(0, given.find('/')));
      if (!again.ok() || *again != config->address) __builtin_trap();
    }
    // The netmask: as many leading ones as the prefix length says.
    uint32_t host_bits = ~config->netmask.value;
    if ((host_bits & (host_bits + 1)) != 0) __builtin_trap();
    int prefix = std::atoi(given.c_str() + given.find('/') + 1);
    if (__builtin_popcount(config->netmask.value) != prefix) __builtin_trap();
  }
  if (const char* gw = fox::BootArg("fox.gw")) {
    auto parsed = fox::net::Ipv4::Parse(gw);
    if (!parsed.ok() || *parsed != config->gateway) __builtin_trap();
  }
  return 0;
}
