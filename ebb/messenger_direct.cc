// Direct large messages (messenger.h): between hosted places on one host,
// the receiver copies a large message out of the sender's memory
// (fox/peer_memory.h) instead of the sender cutting it into fragments.
//
// Sender: a peer is probed once (the peer reads a nonce at an address here
// and answers whether it read it): when the job is up (ProbePeers), when it
// becomes alive, or at the first large message to it, which then goes as
// fragments, as does every message to a peer that answered no. To a peer
// that answered yes, a message travels as its id, target, length and
// address; the sender keeps the bytes in outgoing_ until the peer's done
// (or death). Receiver: reads the bytes, delivers them as a reassembled
// message is delivered, then says done. All of the Messenger's handlers run
// on its core in arrival order, so a direct message keeps its place among
// the fragmented ones. A reply may block the listener (the peer's window
// full): the messages behind it then go on in a new drain event, which is
// harmless only because every reply comes after its message's delivery
// (or, for a probe's answer, while that peer still sends fragments).
#include <cstring>

#include "fox/boot_args.h"
#include "fox/clock.h"
#include "fox/ebb/messenger.h"
#include "fox/log.h"
#include "fox/net/wire.h"

namespace fox::ebb {
namespace {
constexpr size_t kProbeBytes = 24, kAnswerBytes = 16, kDirectBytes = 32, kDoneBytes = 8;

void Control(NodeId to, HandlerId handler, const uint8_t* data, size_t length) {
  (void)am::SendWait(to, kMessengerId, handler, data, length);  // fails only for a dead peer
  am::Flush(to);
}
}  // namespace

bool Messenger::DirectEnabled() {
  const char* direct = BootArg("fox.direct");
  return peer_memory::Self() != 0 && !(direct != nullptr && std::strcmp(direct, "off") == 0);
}

// Fills `probe` for `node` if it was never probed (its state then
// kProbing); false otherwise.
bool Messenger::StartProbeLocked(NodeId node, uint8_t* probe) {
  DirectPeer& peer = direct_to_[node];
  if (peer.state != Direct::kUnknown) return false;
  peer.state = Direct::kProbing;
  // Unlikely at that address in any other process.
  peer.nonce = ((clock::NowNs() ^ (uint64_t(node) << 40) ^ (peer_memory::Self() << 20)) * 0x9E3779B97F4A7C15ull) | 1;
  net::wire::Store64(probe, peer.nonce);
  net::wire::Store64(probe + 8, peer_memory::Self());
  net::wire::Store64(probe + 16, uint64_t(reinterpret_cast<uintptr_t>(&peer.nonce)));
  return true;
}

// A peer became alive: probe it now, so that its first large message
// need not go as fragments (an event on the Messenger's core).
void Messenger::ProbeEarly(NodeId node) {
  if (!direct_enabled_ || node == am::Self()) return;
  uint8_t probe[kProbeBytes];
  {
    SpinGuard g(lock_);
    if (!StartProbeLocked(node, probe)) return;
  }
  Control(node, kDirectProbe, probe, sizeof probe);
}

void Messenger::ProbePeers() {
  for (NodeId p : am::Peers()) {
    if (am::State(p) == am::PeerState::kAlive) ProbeEarly(p);
  }
}

Result<void> Messenger::SendDirect(NodeId node, EbbId id, HandlerId handler, const uint8_t* data, size_t length,
                                   const Shared* shared, bool* sent) {
  *sent = false;
  if (!direct_enabled_ || length < kDirectMinBytes) return {};
  uint8_t probe[kProbeBytes];
  bool probing;
  {
    SpinGuard g(lock_);
    probing = StartProbeLocked(node, probe);
    if (!probing && (direct_to_[node].state != Direct::kYes || outgoing_bytes_ + length > kMaxPartialBytes)) {
      return {};
    }
  }
  if (probing) {  // this message goes as fragments; later ones may not
    FOX_TRY(am::SendWait(node, kMessengerId, kDirectProbe, probe, sizeof probe));
    am::Flush(node);
    return {};
  }
  Shared bytes = shared != nullptr ? *shared : std::make_shared<const std::vector<uint8_t>>(data, data + length);
  if (shared == nullptr) data = bytes->data();
  uint64_t message = next_message_.fetch_add(1, std::memory_order_relaxed);
  uint8_t d[kDirectBytes];
  net::wire::Store64(d, message);
  net::wire::Store32(d + 8, Raw(id));
  net::wire::Store16(d + 12, Raw(handler));
  net::wire::Store16(d + 14, 0);
  net::wire::Store64(d + 16, length);
  net::wire::Store64(d + 24, uint64_t(reinterpret_cast<uintptr_t>(data)));
  {
    SpinGuard g(lock_);
    outgoing_bytes_ += length;
    outgoing_.emplace(message, Outgoing{node, std::move(bytes), length});
  }
  auto r = am::SendWait(node, kMessengerId, kDirectMessage, d, sizeof d);
  if (r.ok()) am::Flush(node);
  Shared unsent;  // freed outside the lock
  SpinGuard g(lock_);
  if (!r.ok()) {
    auto it = outgoing_.find(message);
    if (it != outgoing_.end()) {
      outgoing_bytes_ -= it->second.length;
      unsent = std::move(it->second.bytes);
      outgoing_.erase(it);
    }
    return r.error();
  }
  ++stats_.direct_sent;
  *sent = true;
  return {};
}

// A peer asks whether this node can read its memory.
void Messenger::OnProbe(NodeId from, const uint8_t* data, size_t length) {
  if (length != kProbeBytes) return Dropped(from, "a malformed direct probe");
  uint64_t nonce = net::wire::Load64(data), pid = net::wire::Load64(data + 8), address = net::wire::Load64(data + 16);
  bool read = false;
  if (direct_enabled_) {
    auto it = direct_from_.find(from);
    if (it != direct_from_.end() && it->second.pid != pid) {
      peer_memory::Close(&it->second);
      direct_from_.erase(it);
      it = direct_from_.end();
    }
    peer_memory::Peer peer;
    if (it != direct_from_.end()) {
      peer = it->second;
    } else if (auto opened = peer_memory::Open(pid); opened.ok()) {
      peer = *opened;
    }
    uint64_t got = 0;
    read = peer.handle >= 0 && peer_memory::Read(peer, address, &got, sizeof got).ok() && got == nonce;
    if (read) {
      direct_from_[from] = peer;
    } else if (it == direct_from_.end()) {
      peer_memory::Close(&peer);
    }
  }
  uint8_t answer[kAnswerBytes];
  net::wire::Store64(answer, nonce);
  net::wire::Store64(answer + 8, read ? 1 : 0);
  Control(from, kDirectAnswer, answer, sizeof answer);
}

void Messenger::OnProbeAnswer(NodeId from, const uint8_t* data, size_t length) {
  if (length != kAnswerBytes) return Dropped(from, "a malformed answer to a direct probe");
  uint64_t nonce = net::wire::Load64(data), read = net::wire::Load64(data + 8);
  SpinGuard g(lock_);
  auto it = direct_to_.find(from);
  if (it == direct_to_.end() || it->second.state != Direct::kProbing || it->second.nonce != nonce) return;
  it->second.state = read == 1 ? Direct::kYes : Direct::kNo;
  if (read != 1) ++stats_.probes_refused;
}

void Messenger::OnDirect(NodeId from, const uint8_t* data, size_t length) {
  if (length != kDirectBytes) return Dropped(from, "a malformed direct large message");
  uint64_t message = net::wire::Load64(data), size = net::wire::Load64(data + 16),
           address = net::wire::Load64(data + 24);
  EbbId id{net::wire::Load32(data + 8)};
  HandlerId handler{net::wire::Load16(data + 12)};
  uint8_t done[kDoneBytes];
  net::wire::Store64(done, message);
  auto it = direct_from_.find(from);
  if (size > kMaxLargeBytes || it == direct_from_.end()) {
    Control(from, kDirectDone, done, sizeof done);
    return Dropped(from, size > kMaxLargeBytes
                             ? "a direct large message over the size limit"
                             : "a direct large message from a node whose memory this one cannot read");
  }
  std::vector<uint8_t> bytes(size);
  auto r = peer_memory::Read(it->second, address, bytes.data(), size);
  if (!r.ok()) {
    Control(from, kDirectDone, done, sizeof done);
    return Dropped(from, r.error() == Error::kNotFound ? "its sender ended before it was read"
                                                       : "the sender's memory could not be read");
  }
  {
    SpinGuard g(lock_);
    ++stats_.direct_received;
  }
  Deliver(from, id, handler, std::move(bytes));
  Control(from, kDirectDone, done, sizeof done);
}

void Messenger::OnDirectDone(NodeId from, const uint8_t* data, size_t length) {
  if (length != kDoneBytes) return Dropped(from, "a malformed direct done");
  Shared read;  // freed outside the lock
  SpinGuard g(lock_);
  auto it = outgoing_.find(net::wire::Load64(data));
  if (it == outgoing_.end() || it->second.node != from) return;
  outgoing_bytes_ -= it->second.length;
  read = std::move(it->second.bytes);
  outgoing_.erase(it);
}

// `dead` died: what it was to read is freed, its handle closed.
void Messenger::ForgetDirect(NodeId dead) {
  if (auto it = direct_from_.find(dead); it != direct_from_.end()) {
    peer_memory::Close(&it->second);
    direct_from_.erase(it);
  }
  std::vector<Shared> unread;  // freed outside the lock
  SpinGuard g(lock_);
  direct_to_.erase(dead);
  for (auto it = outgoing_.begin(); it != outgoing_.end();) {
    if (it->second.node != dead) {
      ++it;
      continue;
    }
    outgoing_bytes_ -= it->second.length;
    unread.push_back(std::move(it->second.bytes));
    it = outgoing_.erase(it);
  }
}

}  // namespace fox::ebb
