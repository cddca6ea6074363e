// The Messenger's large messages (messenger.h).
//
// A large message travels as fragments, ordinary messages to the Ebb
// kMessengerId with handler kFragment:
//   u64 message id (the sender's counter), u32 target Ebb id, u16 target
//   handler, u16 zero, u32 total length, u32 offset, then up to kChunk bytes.
// One sending event sends a message's fragments in order and the channel
// keeps them in order, so on the receiver each message's fragments arrive
// in offset order (other messages' fragments may come in between): a
// fragment whose offset is not where the message stands is malformed. The
// fragments go to a Mailbox, so reassembly runs as events on one core and
// may allocate; a message's buffer is allocated whole at its first fragment
// (within kMaxPartialBytes for all unfinished messages of the node).
#include "fox/ebb/messenger.h"

#include <cstring>
#include <iterator>

#include "fox/clock.h"
#include "fox/core.h"
#include "fox/event.h"
#include "fox/log.h"
#include "fox/net/wire.h"

namespace fox::ebb {
namespace {
constexpr uint16_t kFragment = 1;
constexpr size_t kFragmentHeader = 24;
constexpr size_t kChunk = net::kMaxMessageBytes - kFragmentHeader;
using net::wire::Load16;
using net::wire::Load32;
using net::wire::Load64;
using net::wire::Store16;
using net::wire::Store32;
using net::wire::Store64;
}  // namespace

Messenger::Messenger()
    : core_(core::Current()),
      fragments_(std::make_unique<am::Mailbox>(
          core_, [this](am::NodeId from, uint16_t handler, const uint8_t* data, size_t length) {
            if (handler == kFragment) OnFragment(from, data, length);
          })) {
  if (auto r = am::Register(kMessengerId, fragments_.get()); !r.ok()) {
    LOG_ERROR("Messenger: cannot receive large messages: %s", ErrorName(r.error()));
  }
  am::OnPeerState([this](am::NodeId node, am::PeerState state) {
    if (state == am::PeerState::kDead) DropFrom(node);
  });
}

Messenger::~Messenger() { am::Unregister(kMessengerId); }

Result<void> Messenger::ListenLarge(EbbId id, LargeHandler handler) {
  if (id == kNullId) return Error::kInvalidArgument;
  auto h = std::make_shared<LargeHandler>(std::move(handler));
  SpinGuard g(lock_);
  if (!handlers_.emplace(id, std::move(h)).second) return Error::kAlreadyExists;
  return {};
}

void Messenger::StopListeningLarge(EbbId id) {
  std::shared_ptr<LargeHandler> gone;  // destroyed outside the lock
  SpinGuard g(lock_);
  auto it = handlers_.find(id);
  if (it == handlers_.end()) return;
  gone = std::move(it->second);
  handlers_.erase(it);
}

Messenger::LargeStats Messenger::large_stats() const {
  SpinGuard g(lock_);
  return stats_;
}

Result<void> Messenger::SendLarge(NetworkNode node, EbbId id, uint16_t handler, const void* data, size_t length) {
  if (id == kNullId) return Error::kInvalidArgument;
  if (length > kMaxLargeBytes) return Error::kOutOfRange;
  const auto* bytes = static_cast<const uint8_t*>(data);
  if (node == am::Self()) {
    std::vector<uint8_t> copy(bytes, bytes + length);
    event::SpawnRemote(core_, [this, node, id, handler, copy = std::move(copy)]() mutable {
      Deliver(node, id, handler, std::move(copy));
    });
  } else {
    uint64_t message = next_message_.fetch_add(1, std::memory_order_relaxed);
    uint8_t fragment[net::kMaxMessageBytes];
    Store64(fragment, message);
    Store32(fragment + 8, id);
    Store16(fragment + 12, handler);
    Store16(fragment + 14, 0);
    Store32(fragment + 16, uint32_t(length));
    size_t offset = 0;
    do {  // an empty message is one empty fragment
      size_t chunk = length - offset < kChunk ? length - offset : kChunk;
      Store32(fragment + 20, uint32_t(offset));
      if (chunk != 0) std::memcpy(fragment + kFragmentHeader, bytes + offset, chunk);
      FOX_TRY(am::SendWait(node, kMessengerId, kFragment, fragment, kFragmentHeader + chunk));
      offset += chunk;
    } while (offset < length);
    am::Flush(node);
  }
  SpinGuard g(lock_);
  ++stats_.sent;
  return {};
}

void Messenger::OnFragment(NetworkNode from, const uint8_t* data, size_t length) {
  if (length < kFragmentHeader) return Dropped(from, "a fragment shorter than its header");
  uint64_t message = Load64(data);
  EbbId id = Load32(data + 8);
  uint16_t handler = Load16(data + 12);
  size_t total = Load32(data + 16), offset = Load32(data + 20);
  size_t chunk = length - kFragmentHeader;
  auto key = std::make_pair(from, message);
  auto it = partials_.find(key);
  if (it == partials_.end()) {
    if (offset != 0) return Dropped(from, "a fragment of a message whose start never came");
    Partial p;
    p.id = id;
    p.handler = handler;
    p.total = total;
    const char* why = total > kMaxLargeBytes                          ? "longer than kMaxLargeBytes"
                      : partial_bytes_ + total > kMaxPartialBytes ? "reassembly memory is full"
                                                                      : nullptr;
    if (why != nullptr) {
      p.discard = true;  // swallow the rest of it quietly
      Dropped(from, why);
    } else {
      p.data.resize(total);
      partial_bytes_ += total;
    }
    it = partials_.emplace(key, std::move(p)).first;
  }
  Partial& p = it->second;
  if (offset != p.received || chunk > p.total - p.received || p.id != id || p.handler != handler ||
      total != p.total) {
    if (!p.discard) Dropped(from, "a fragment out of place");
    Forget(it);  // what follows of it is "a fragment of a message whose start never came"
    return;
  }
  if (!p.discard && chunk != 0) std::memcpy(p.data.data() + offset, data + kFragmentHeader, chunk);
  p.received += chunk;
  if (p.received < p.total) return;
  bool deliver = !p.discard;
  std::vector<uint8_t> whole = std::move(p.data);
  Forget(it);
  if (deliver) Deliver(from, id, handler, std::move(whole));
}

void Messenger::Forget(PartialMap::iterator it) {
  if (!it->second.discard) partial_bytes_ -= it->second.total;
  partials_.erase(it);
}

// Counts a dropped message (or stray fragment); says why at most once a second.
void Messenger::Dropped(NetworkNode from, const char* why) {
  uint64_t now = clock::NowNs();
  if (now - last_warning_ns_ >= 1'000'000'000 || last_warning_ns_ == 0) {
    last_warning_ns_ = now;
    LOG_WARN("Messenger: large message from node %u dropped: %s", from, why);
  }
  SpinGuard g(lock_);
  ++stats_.dropped;
}

void Messenger::Deliver(NetworkNode from, EbbId id, uint16_t handler, std::vector<uint8_t> data) {
  std::shared_ptr<LargeHandler> h;
  {
    SpinGuard g(lock_);
    auto it = handlers_.find(id);
    if (it == handlers_.end()) {
      ++stats_.no_handler;
      return;
    }
    h = it->second;
    ++stats_.received;
  }
  (*h)(from, handler, std::move(data));
}

void Messenger::DropFrom(NetworkNode node) {
  uint64_t dropped = 0;
  for (auto it = partials_.lower_bound({node, 0}); it != partials_.end() && it->first.first == node;) {
    auto next = std::next(it);
    dropped += it->second.discard ? 0 : 1;
    Forget(it);
    it = next;
  }
  if (dropped == 0) return;
  LOG_WARN("Messenger: node %u died with %llu large messages unfinished", node, (unsigned long long)dropped);
  SpinGuard g(lock_);
  stats_.dropped += dropped;
}

}  // namespace fox::ebb
