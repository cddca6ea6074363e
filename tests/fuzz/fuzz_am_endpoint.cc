// libFuzzer: the AM endpoint (net/am_endpoint.h) fed a script of datagrams,
// sends and timer polls. Datagrams longer than the header get a correct MAC
// half of the time (the fuzzer cannot forge SipHash), so the peer lookup,
// the channel and message delivery see authenticated garbage too. Checks:
// no crash, no sanitizer report, every delivered message well-formed and
// from a known peer, bounded work, and a deferred buffer (SendOrDefer,
// also from inside delivery, as replies) that empties once the peers die.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fox/net/am_endpoint.h"
#include "fox/net/am_frame.h"
#include "fox/net/wire.h"

using namespace fox::net;
using fox::NodeId;

namespace {
const SipKey kKey{0x0123456789abcdefull, 0xfedcba9876543210ull};
constexpr uint64_t kJob = 9;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  EndpointConfig cfg;
  cfg.job = kJob;
  cfg.key = kKey;
  cfg.self = 2;
  cfg.channel.send_window = 8;
  cfg.channel.recv_window = 8;
  cfg.deferred_bytes = 8192;  // small: the full buffer is reached too
  AmEndpoint ep(cfg);
  uint64_t now = 1;
  if (!ep.AddPeer(1, 1, now).ok() || !ep.AddPeer(3, 3, now).ok()) __builtin_trap();
  size_t transmitted = 0;
  auto tx = [&](uint64_t address, const uint8_t* f, size_t n) {
    if ((address != 1 && address != 3) || n > kMaxFrameBytes) __builtin_trap();
    ++transmitted;
    return true;
  };
  auto deliver = [&](NodeId from, const AmMessage& m) {
    if ((from != 1 && from != 3) || m.length > kMaxMessageBytes || (m.length > 0 && m.data == nullptr)) {
      __builtin_trap();
    }
    uint8_t sum = 0;
    for (size_t i = 0; i < m.length; ++i) sum = uint8_t(sum ^ m.data[i]);  // touch every byte (ASan)
    asm volatile("" : : "r"(sum));
    if (fox::Raw(m.handler) & 1)
      (void)ep.SendOrDefer(from, fox::EbbId{78}, m.handler, m.data, m.length, now, tx);  // a reply
  };
  auto on_state = [](NodeId, PeerState) {};
  std::vector<uint8_t> frame;
  size_t i = 0;
  while (i < size) {
    uint8_t op = data[i++];
    switch (op % 4) {
      case 0: {  // a datagram: 2-byte length, then bytes
        if (i + 2 > size) return 0;
        size_t len = wire::Load16(data + i) % 1600;
        i += 2;
        len = len > size - i ? size - i : len;
        frame.assign(data + i, data + i + len);
        i += len;
        if ((op & 4) && frame.size() >= kHeaderBytes) {
          std::memset(frame.data() + frame_offset::kMac, 0, 8);
          wire::Store64(frame.data() + frame_offset::kMac, FrameMac(kKey, frame.data(), frame.size()));
        }
        if (op & 8) {  // the driver refuses frames with a message for Ebb 13 ("no receiver yet")
          auto admit = [](const FrameView& f) {
            for (AmMessage m : f) {
              if (m.ebb == fox::EbbId{13}) return false;
            }
            return true;
          };
          AmEndpoint::AdmitFn admit_fn(admit);
          ep.OnDatagram(frame.data(), frame.size(), now, deliver, tx, &admit_fn);
        } else {
          ep.OnDatagram(frame.data(), frame.size(), now, deliver, tx);
        }
        break;
      }
      case 1: {  // a send of op bytes to peer 1 or 3, or the same through the deferred buffer
        uint8_t payload[256] = {};
        if (op & 16) {
          (void)ep.SendOrDefer((op & 8) ? 1 : 3, fox::EbbId{77}, fox::HandlerId{op}, payload, op, now, tx);
        } else {
          (void)ep.Send((op & 8) ? 1 : 3, fox::EbbId{77}, fox::HandlerId{op}, payload, op, now, tx);
        }
        break;
      }
      case 2:  // time passes
        now += uint64_t(op) * 1'000'000;
        (void)ep.Poll(now, tx, on_state);
        break;
      case 3:
        if (op == 255) ep.DeclareDead(3, on_state);
        ep.Flush(AmEndpoint::kAnyPeer, now, tx);
        break;
    }
  }
  if (transmitted > 1'000'000) __builtin_trap();  // bounded work per input
  // Deferred messages of dead peers are dropped: the buffer empties.
  ep.DeclareDead(1, on_state);
  ep.DeclareDead(3, on_state);
  (void)ep.Poll(now, tx, on_state);
  if (ep.deferred_messages() != 0) __builtin_trap();
  return 0;
}
