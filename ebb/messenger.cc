// The Messenger's large messages (messenger.h): fragments (wire format and
// reassembly in fragments.h) sent as ordinary messages to the Ebb
// kMessengerId, received by a Mailbox so that reassembly runs as events on
// one core and may allocate.
#include "fox/ebb/messenger.h"

#include <cstring>

#include "fox/clock.h"
#include "fox/core.h"
#include "fox/event.h"
#include "fox/log.h"

namespace fox::ebb {
namespace {
constexpr uint16_t kFragment = 1;
constexpr size_t kChunk = net::kMaxMessageBytes - kFragmentHeaderBytes;
}  // namespace

Messenger::Messenger()
    : core_(core::Current()),
      fragments_(std::make_unique<am::Mailbox>(
          core_, [this](am::NodeId from, uint16_t handler, const uint8_t* data, size_t length) {
            if (handler == kFragment) reassembler_.OnFragment(from, data, length);
          })),
      reassembler_(
          kMaxLargeBytes, kMaxPartialBytes,
          [this](uint32_t from, uint32_t ebb, uint16_t handler, std::vector<uint8_t> data) {
            Deliver(from, ebb, handler, std::move(data));
          },
          [this](uint32_t from, const char* why) { Dropped(from, why); }) {
  if (auto r = am::Register(kMessengerId, fragments_.get()); !r.ok()) {
    LOG_ERROR("Messenger: cannot receive large messages: %s", ErrorName(r.error()));
  }
  am::OnPeerState([this](am::NodeId node, am::PeerState state) {
    if (state != am::PeerState::kDead) return;
    size_t dropped = reassembler_.DropFrom(node);
    if (dropped == 0) return;
    LOG_WARN("Messenger: node %u died with %zu large messages unfinished", node, dropped);
    SpinGuard g(lock_);
    stats_.dropped += dropped;
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
    size_t offset = 0;
    do {  // an empty message is one empty fragment
      size_t chunk = length - offset < kChunk ? length - offset : kChunk;
      EncodeFragmentHeader(fragment, message, id, handler, uint32_t(length), uint32_t(offset));
      if (chunk != 0) std::memcpy(fragment + kFragmentHeaderBytes, bytes + offset, chunk);
      FOX_TRY(am::SendWait(node, kMessengerId, kFragment, fragment, kFragmentHeaderBytes + chunk));
      offset += chunk;
    } while (offset < length);
    am::Flush(node);
  }
  SpinGuard g(lock_);
  ++stats_.sent;
  return {};
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

// Counts a dropped message (or stray fragment); says why at most once a second.
void Messenger::Dropped(NetworkNode from, const char* why) {
  uint64_t now = clock::NowNs();
  if (last_warning_ns_ == 0 || now - last_warning_ns_ >= 1'000'000'000) {
    last_warning_ns_ = now;
    LOG_WARN("Messenger: large message from node %u dropped: %s", from, why);
  }
  SpinGuard g(lock_);
  ++stats_.dropped;
}

}  // namespace fox::ebb
