// This node's rings (rings.h).
#include "rings.h"

#include <algorithm>

#include "fox/net/am.h"

namespace fox::ebb::dht {

Rings::Pair Rings::Get() const {
  SpinGuard g(lock_);
  return {ring_, target_};
}

void Rings::Set(std::shared_ptr<const DhtRing> ring, std::shared_ptr<const DhtRing> target) {
  SpinGuard g(lock_);
  ring_.swap(ring);  // the old ones are released outside the lock
  target_.swap(target);
  generation_.fetch_add(1, std::memory_order_release);
}

std::shared_ptr<const DhtRing> Rings::settled() const {
  SpinGuard g(lock_);
  return settled_;
}

void Rings::Settle(std::shared_ptr<const DhtRing> settled) {
  SpinGuard g(lock_);
  settled_.swap(settled);
}

void Rings::BeginRebuild() {
  SpinGuard g(lock_);
  ++rebuilds_running_;
}

bool Rings::Replace(const Pair& expected, std::shared_ptr<const DhtRing> ring, std::shared_ptr<const DhtRing> target) {
  SpinGuard g(lock_);
  if (ring_ != expected.ring || target_ != expected.target) return false;
  ring_.swap(ring);
  target_.swap(target);
  generation_.fetch_add(1, std::memory_order_release);
  return true;
}

void Rings::EndRebuild() {
  SpinGuard g(lock_);
  --rebuilds_running_;
}

uint64_t Rings::rebuilds_running() const {
  SpinGuard g(lock_);
  return rebuilds_running_;
}

std::shared_ptr<const DhtRing> Rings::AtRest() const {
  SpinGuard g(lock_);
  bool settled = ring_ && settled_ && ring_->nodes() == settled_->nodes();
  return target_ == nullptr && rebuilds_running_ == 0 && settled ? ring_ : nullptr;
}

const Rings::Copy& Rings::Renew(Copy& copy) const {
  uint64_t g = generation_.load(std::memory_order_acquire);
  if (copy.generation == g) return copy;
  std::shared_ptr<const DhtRing> ring, target;
  {
    SpinGuard guard(lock_);
    ring = ring_;
    target = target_;
    g = generation_.load(std::memory_order_relaxed);
  }
  copy.ring = std::move(ring);  // the old ones are released outside the lock
  copy.target = std::move(target);
  copy.generation = g;
  return copy;
}

std::vector<NodeId> Rings::OtherOwners(const Copy& rings, uint64_t key_hash) {
  std::vector<NodeId> out;
  NodeId self = am::Self();
  if (!rings.target && rings.ring && rings.ring->nodes().size() == 1 && rings.ring->nodes()[0] == self) return out;
  for (const auto* r : {rings.ring.get(), rings.target.get()}) {
    if (r == nullptr) continue;
    for (NodeId n : r->OwnersOf(r->PartitionOf(key_hash))) {
      if (n != self && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
    }
  }
  return out;
}

}  // namespace fox::ebb::dht
