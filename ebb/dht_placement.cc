// Plans and the move in progress (dht_placement.h); the rule they follow
// is the design comment of dht_ring.cc.
#include "dht_placement.h"

#include <algorithm>
#include <utility>

namespace fox::ebb {
namespace {

// SplitMix64's finalizer: a cheap, well-mixed 64-bit bijection.
uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The holder that streams `partition` to `destination`: the one with the
// highest weight (rendezvous hashing), so that streams spread over the
// holders and a source keeps its streams when another holder dies.
NodeId PickSource(const std::vector<NodeId>& holders, uint32_t partition, NodeId destination) {
  uint64_t seed = Mix((uint64_t(partition) << 32) | destination);
  NodeId best = holders.front();
  uint64_t best_weight = Mix(seed ^ best);
  for (NodeId holder : holders) {
    uint64_t weight = Mix(seed ^ holder);
    if (weight > best_weight || (weight == best_weight && holder < best)) {
      best = holder;
      best_weight = weight;
    }
  }
  return best;
}

bool Has(std::span<const NodeId> nodes, NodeId node) {
  return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

}  // namespace

std::vector<NodeId> HoldersOf(const DhtRing& settled, const DhtRing& target, uint32_t partition) {
  std::vector<NodeId> holders;
  for (NodeId node : settled.OwnersOf(partition)) {
    if (target.Contains(node)) holders.push_back(node);
  }
  return holders;
}

Result<Plan> PlanMove(const DhtRing& settled, const DhtRing& target) {
  if (settled.config() != target.config()) return Error::kInvalidArgument;
  Plan plan;
  plan.from_epoch = settled.epoch();
  plan.to_epoch = target.epoch();
  for (uint32_t p = 0; p < target.partitions(); ++p) {
    auto was = settled.OwnersOf(p), now = target.OwnersOf(p);
    if (std::is_permutation(was.begin(), was.end(), now.begin(), now.end())) continue;
    std::vector<NodeId> holders = HoldersOf(settled, target, p);
    if (holders.empty()) {
      // Either nothing was ever stored (an empty ring before) or every copy died.
      if (!was.empty()) plan.lost.push_back(p);
      continue;
    }
    for (NodeId node : now) {
      if (!Has(holders, node)) plan.transfers.push_back({p, PickSource(holders, p, node), node});
    }
    for (NodeId node : holders) {
      if (!Has(now, node)) plan.releases.push_back({p, node});
    }
  }
  std::sort(plan.transfers.begin(), plan.transfers.end());
  std::sort(plan.releases.begin(), plan.releases.end());
  return plan;
}

Placement::Placement(DhtRing ring) : settled_(ring), target_(std::move(ring)) {
  plan_.from_epoch = plan_.to_epoch = settled_.epoch();
}

Result<void> Placement::MoveTo(DhtRing next) {
  if (next.config() != target_.config()) return Error::kInvalidArgument;
  if (next.epoch() <= target_.epoch()) return Error::kOutOfRange;
  FOX_TRY_ASSIGN(Plan plan, PlanMove(settled_, next));
  // A destination that finished a partition and owns it in both targets
  // has been in the write set throughout: it still holds everything, so
  // its transfer stays done whichever source the new plan names.
  std::vector<std::pair<uint32_t, NodeId>> finished;
  for (size_t j = 0; j < plan_.transfers.size(); ++j) {
    if (done_[j]) finished.emplace_back(plan_.transfers[j].partition, plan_.transfers[j].destination);
  }
  std::sort(finished.begin(), finished.end());
  std::vector<bool> done(plan.transfers.size(), false);
  size_t remaining = plan.transfers.size();
  for (size_t i = 0; i < plan.transfers.size(); ++i) {
    const Transfer& t = plan.transfers[i];
    if (std::binary_search(finished.begin(), finished.end(), std::make_pair(t.partition, t.destination))) {
      done[i] = true;
      --remaining;
    }
  }
  target_ = std::move(next);
  plan_ = std::move(plan);
  done_ = std::move(done);
  remaining_ = remaining;
  return Ok();
}

Result<void> Placement::Complete(const Transfer& transfer) {
  auto it = std::lower_bound(plan_.transfers.begin(), plan_.transfers.end(), transfer);
  if (it == plan_.transfers.end() || *it != transfer) return Error::kNotFound;
  size_t i = size_t(it - plan_.transfers.begin());
  if (!done_[i]) {
    done_[i] = true;
    --remaining_;
  }
  return Ok();
}

Result<void> Placement::Settle() {
  if (remaining_ != 0) return Error::kBusy;
  settled_ = target_;
  plan_ = Plan{};
  plan_.from_epoch = plan_.to_epoch = settled_.epoch();
  done_.clear();
  return Ok();
}

std::vector<Transfer> Placement::Remaining() const {
  std::vector<Transfer> out;
  for (size_t i = 0; i < plan_.transfers.size(); ++i) {
    if (!done_[i]) out.push_back(plan_.transfers[i]);
  }
  return out;
}

bool Placement::IsDone(const Transfer& transfer) const {
  auto it = std::lower_bound(plan_.transfers.begin(), plan_.transfers.end(), transfer);
  return it != plan_.transfers.end() && *it == transfer && done_[size_t(it - plan_.transfers.begin())];
}

bool Placement::IsLost(uint32_t partition) const {
  return std::binary_search(plan_.lost.begin(), plan_.lost.end(), partition);
}

std::vector<NodeId> Placement::WriteSet(uint32_t partition) const {
  if (IsLost(partition)) return {};
  auto owners = target_.OwnersOf(partition);
  std::vector<NodeId> out(owners.begin(), owners.end());
  for (NodeId node : Holders(partition)) {
    if (!Has(owners, node)) out.push_back(node);
  }
  return out;
}

}  // namespace fox::ebb
