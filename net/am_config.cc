// The transport's boot arguments (am.h: ConfigFromBootArgs, ParsePeers).
// Every malformed value is a clear message and kInvalidArgument, never a
// crash: these parse what an operator typed (tests/fuzz covers them).
#include <algorithm>
#include <string_view>
#include <vector>

#include "fox/boot_args.h"
#include "fox/cmdline.h"
#include "fox/log.h"
#include "fox/net/am.h"
#include "fox/net/ipv4.h"
#include "fox/net/siphash.h"
#include "fox/net/wire.h"

namespace fox::am {
namespace {

// 32 hexadecimal digits into a key; false otherwise.
bool ParseKey(std::string_view text, net::SipKey* key) {
  if (text.size() != 32) return false;
  uint64_t half[2] = {0, 0};
  for (size_t i = 0; i < 32; ++i) {
    char c = text[i];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) return false;
    half[i / 16] = half[i / 16] << 4 | uint64_t(d);
  }
  *key = {half[0], half[1]};
  return true;
}

// A decimal number in [0, max], with the command line's parser.
bool ParseDecimal(std::string_view s, uint64_t max, uint64_t* out) {
  auto n = ParseUInt(s);
  if (!n.ok() || *n > max) return false;
  *out = *n;
  return true;
}

}  // namespace

Result<void> ParsePeers(std::string_view text, uint16_t default_port, FunctionRef<void(NodeId, uint32_t, uint16_t)> add,
                        const char** error) {
  struct Entry {
    NodeId node;
    uint32_t ip;
    uint16_t port;
  };
  std::vector<Entry> entries;
  auto fail = [&](const char* why) -> Result<void> {
    if (error != nullptr) *error = why;
    return Error::kInvalidArgument;
  };
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string_view item =
        text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    size_t at = item.find('@');
    if (at == std::string_view::npos) return fail("expected ID@A.B.C.D[:PORT]");
    uint64_t node = 0, port = default_port;
    if (!ParseDecimal(item.substr(0, at), 0x7FFFFFFF, &node)) return fail("bad node id");
    std::string_view where = item.substr(at + 1);
    size_t colon = where.find(':');
    if (colon != std::string_view::npos) {
      if (!ParseDecimal(where.substr(colon + 1), 65535, &port) || port == 0) return fail("bad port");
      where = where.substr(0, colon);
    }
    auto ip = net::Ipv4::Parse(where);
    if (!ip.ok()) return fail("bad IPv4 address");
    entries.push_back({NodeId(node), ip->value, uint16_t(port)});
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  for (auto& e : entries) add(e.node, e.ip, e.port);
  return {};
}

Result<Config> ConfigFromBootArgs() {
  Config c;
  c.self = NodeId(BootArgNumber("fox.node", 0));
  c.job = BootArgNumber("fox.job", 1);
  c.port = uint16_t(BootArgNumber("fox.amport", kDefaultPort));
  if (const char* a = BootArg("fox.aggregate")) c.tuning.aggregate = std::string_view(a) != "off";
  // Membership timers (ranges checked with the other boot arguments). The
  // direct probe's wait keeps its share of the period.
  net::MembershipConfig& m = c.tuning.membership;
  uint64_t probe_ms = BootArgNumber("fox.probe_ms", 0);
  if (probe_ms != 0) {
    m.probe_timeout_ns = m.probe_timeout_ns * probe_ms * 1'000'000 / m.probe_period_ns;
    m.probe_period_ns = probe_ms * 1'000'000;
  }
  m.suspicion_ns = BootArgNumber("fox.suspect_ms", m.suspicion_ns / 1'000'000) * 1'000'000;
  m.join_timeout_ns = BootArgNumber("fox.join_ms", m.join_timeout_ns / 1'000'000) * 1'000'000;
  if (const char* k = BootArg("fox.key")) {
    if (!ParseKey(k, &c.key)) {
      LOG_ERROR("am: bad boot argument 'fox.key': expected 32 hexadecimal digits");
      return Error::kInvalidArgument;
    }
    c.key_given = true;
  } else {
    // The development key: frames are still checked against accidents
    // (other jobs, corruption), but anyone who knows the job id can forge.
    uint8_t job[8];
    net::wire::Store64(job, c.job);
    net::SipKey dev{0x666f782d6465762dull, 0x6b65792d76312d2dull};  // "fox-dev-key-v1--"
    uint64_t h = net::SipHash24(dev, job, sizeof job);
    c.key = {h, ~h};
  }
  if (const char* p = BootArg("fox.peers")) {
    const char* why = nullptr;
    size_t peers = 0;
    if (!ParsePeers(
             p, c.port, [&](NodeId n, uint32_t, uint16_t) { peers += n != c.self; }, &why)
             .ok()) {
      LOG_ERROR("am: bad boot argument 'fox.peers=%s': %s", p, why);
      return Error::kInvalidArgument;
    }
    // Every peer's channel holds send_window + recv_window frame buffers
    // (~3 KiB a pair): the default 128 up to 16 peers, then less, so that
    // all channels stay near 6 MiB (a 64-node job on 64 MiB nodes: 32).
    // Every node of a job counts the same peers: windows match.
    uint32_t window = peers <= 16 ? c.tuning.channel.send_window : uint32_t(std::max<size_t>(8, 2048 / peers));
    c.tuning.channel.send_window = c.tuning.channel.recv_window = std::min(window, c.tuning.channel.send_window);
  }
  return c;
}

}  // namespace fox::am
