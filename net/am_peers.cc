// Peers of this node (am.h): adding them, their states, the subscribers
// told of changes, and death notices.
#include "am_driver.h"
#include "fox/clock.h"
#include "fox/log.h"

namespace fox::am {
namespace internal {

void NotifySubscribers(NodeId node, PeerState state) {
  std::vector<StateCallback> subscribers;
  {
    Locked l;
    subscribers = g.state_callbacks;  // copies shared pointers: the pump's event context
  }
  for (auto& s : subscribers) {
    event::SpawnRemote(s.core, [fn = s.fn, live = s.live, node, state] {
      if (live->load(std::memory_order_acquire)) (*fn)(node, state);
    });
  }
}

}  // namespace internal

using internal::g;
using internal::Locked;

Result<void> AddPeer(NodeId node, uint32_t ip, uint16_t port) {
  if (!Started()) return Error::kNotFound;
  uint64_t address = internal::MakeAddress(ip, port);
  Result<void> r{};
  {
    Locked l;
    r = g.endpoint->AddPeer(node, address, clock::NowNs());
  }
  if (r.ok() || r.error() == Error::kAlreadyExists) internal::PlatformPeerAdded(address);
  if (r.ok()) {
    internal::KickPump(clock::NowNs());
    LOG_DEBUG("am: peer %u at %u.%u.%u.%u:%u", node, ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255, port);
  }
  return r;
}

uint64_t OnPeerState(Function<void(NodeId, PeerState)> callback, int core) {
  internal::StateCallback s{0, core < 0 ? core::Current() : core,
                            std::make_shared<Function<void(NodeId, PeerState)>>(std::move(callback)),
                            std::make_shared<std::atomic<bool>>(true)};
  Locked l;
  s.id = g.next_subscription++;
  g.state_callbacks.push_back(std::move(s));
  return g.state_callbacks.back().id;
}

void StopPeerState(uint64_t subscription) {
  std::shared_ptr<Function<void(NodeId, PeerState)>> gone;  // destroyed outside the lock
  Locked l;
  for (size_t i = 0; i < g.state_callbacks.size(); ++i) {
    if (g.state_callbacks[i].id != subscription) continue;
    g.state_callbacks[i].live->store(false, std::memory_order_release);
    gone = std::move(g.state_callbacks[i].fn);
    g.state_callbacks.erase(g.state_callbacks.begin() + long(i));
    return;
  }
}

PeerState State(NodeId node) {
  if (!Started()) return PeerState::kUnknown;
  Locked l;
  return g.endpoint->State(node);
}

std::vector<NodeId> Peers() {
  std::vector<NodeId> peers;
  if (!Started()) return peers;
  peers.reserve(net::AmEndpoint::kMaxPeers);
  Locked l;
  g.endpoint->ForEachPeer([&](NodeId n) {
    if (peers.size() < peers.capacity()) peers.push_back(n);  // no allocation under the lock
  });
  return peers;
}

int64_t SilentMs(NodeId node) {
  if (!Started()) return -1;
  uint64_t heard;
  {
    Locked l;
    heard = g.endpoint->LastHeardNs(node);
  }
  uint64_t now = clock::NowNs();
  return heard == 0 ? -1 : int64_t(now > heard ? (now - heard) / 1'000'000 : 0);
}

namespace {
void Declared(const std::vector<NodeId>& dead, const char* how) {
  for (NodeId n : dead) {
    LOG_WARN("am: node %u declared dead (%s)", n, how);
    internal::NotifySubscribers(n, PeerState::kDead);
  }
}
}  // namespace

void NotifyDead(NodeId node) {
  if (!Started() || node == g.config.self) return;
  std::vector<NodeId> dead;
  dead.reserve(1);
  {
    Locked l;
    g.endpoint->NotifyDead(node, clock::NowNs(), internal::kTransmit, [&](NodeId n, PeerState) {
      if (dead.size() < dead.capacity()) dead.push_back(n);
    });
  }
  Declared(dead, "by notice, telling the other nodes");
  g.pump->Fire();  // waiting senders learn it; owed notices go out
}

void DeclareDead(NodeId node) {
  if (!Started()) return;
  std::vector<NodeId> dead;
  dead.reserve(1);
  {
    Locked l;
    g.endpoint->DeclareDead(node, [&](NodeId n, PeerState) {
      if (dead.size() < dead.capacity()) dead.push_back(n);
    });
  }
  Declared(dead, "by notice");
  if (!dead.empty()) g.pump->Fire();  // waiting senders learn it
}

}  // namespace fox::am
