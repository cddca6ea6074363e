// net::ConfigFromBootArgs (fox/net/ip.h): pure parsing of fox.ip and fox.gw,
// apart from lwIP so that the hosted fuzzers (tests/fuzz) can call it.
#include "fox/boot_args.h"
#include "fox/log.h"
#include "fox/net/ip.h"

namespace fox::net {

Result<Config> ConfigFromBootArgs() {
  Config config;
  const char* ip = BootArg("fox.ip");
  const char* gw = BootArg("fox.gw");
  if (gw != nullptr) {
    auto parsed = Ipv4::Parse(gw);
    if (!parsed.ok()) {
      LOG_ERROR("net: bad boot argument 'fox.gw=%s': expected A.B.C.D", gw);
      return Error::kInvalidArgument;
    }
    config.gateway = *parsed;
  }
  if (ip == nullptr) return config;  // DHCP (fox.gw: the fallback gateway)
  int prefix = 0;
  if (!ParseCidr(ip, &config.address, &prefix).ok()) {
    LOG_ERROR("net: bad boot argument 'fox.ip=%s': expected A.B.C.D/NN", ip);
    return Error::kInvalidArgument;
  }
  config.dhcp = false;
  config.netmask = Ipv4::Netmask(prefix);
  return config;
}

}  // namespace fox::net
