// Moving the Dht's data from one ring to the next: rebuild after deaths,
// rebalance after joins, as pure logic (no network, no threads, no clock).
// The rule and its proof: the design comment of dht_ring.cc.
//
// PlanMove(settled, target) is a pure function of two rings: for each
// partition whose owner set changed, a transfer from a surviving old owner
// to each new owner that lacks it, and the partitions that lost all their
// old owners. Placement is one node's copy of the move in progress: the
// settled ring S, the target ring T, the plan and which transfers are
// done; it answers where a write goes (WriteSet) while the move runs.
// Every node that applies the same sequence of MoveTo / Settle calls (the
// Dht orders them by epoch) holds the same Placement; Complete only marks
// progress.
//
// Contexts: allocates (plans are per partition), so event context; not
// thread-safe (one owner, or the caller's lock).
#pragma once

#include <cstdint>
#include <vector>

#include "fox/ebb/dht_ring.h"
#include "fox/net/ids.h"
#include "fox/result.h"

namespace fox::ebb {

struct Transfer {
  uint32_t partition = 0;
  NodeId source = 0;       // holds the partition (an owner in S, alive in T)
  NodeId destination = 0;  // an owner in T that does not hold it
  auto operator<=>(const Transfer&) const = default;
};

struct Release {
  uint32_t partition = 0;
  NodeId node = 0;  // a holder that does not own the partition in T: drops it at settle
  auto operator<=>(const Release&) const = default;
};

struct Plan {
  uint64_t from_epoch = 0;          // S
  uint64_t to_epoch = 0;            // T
  std::vector<Transfer> transfers;  // ascending (partition, source, destination)
  std::vector<uint32_t> lost;       // ascending: partitions none of whose S owners is in T
  std::vector<Release> releases;    // ascending
};

// The move from `settled` (every owner holds its partitions) to `target`.
// kInvalidArgument: the rings' configs differ.
Result<Plan> PlanMove(const DhtRing& settled, const DhtRing& target);

// Holders of `partition` during a move from S to T: its S owners that are
// still members of T (they hold all of its acknowledged writes).
std::vector<NodeId> HoldersOf(const DhtRing& settled, const DhtRing& target, uint32_t partition);

class Placement {
 public:
  // Settled at `ring` (no move). Start from the Dht's first members: a
  // move from an empty ring has no holders, so writes made during it live
  // only on T owners until it settles.
  explicit Placement(DhtRing ring);

  // Membership changed: T := next, and the plan is recomputed from S (a
  // transfer that was done and is still in the new plan stays done).
  // kInvalidArgument: another config; kOutOfRange: next is not newer than T.
  Result<void> MoveTo(DhtRing next);
  // `transfer` finished (the destination merged the whole stream).
  // kNotFound: it is not in the current plan (e.g. replaced by MoveTo).
  Result<void> Complete(const Transfer& transfer);
  // S := T, once every transfer is done (kBusy otherwise). The plan's
  // releases may then drop their partitions. No-op when not moving.
  Result<void> Settle();

  const DhtRing& settled() const { return settled_; }
  const DhtRing& target() const { return target_; }
  bool moving() const { return settled_.epoch() != target_.epoch(); }
  const Plan& plan() const { return plan_; }
  // Transfers of the plan not yet completed, in plan order.
  std::vector<Transfer> Remaining() const;
  size_t remaining() const { return remaining_; }
  bool IsDone(const Transfer& transfer) const;

  // Where a write to `partition` goes: its T owners (primary first), then
  // its other holders. Acknowledge when every one holds it. Empty for a
  // lost partition: writes to it fail until Settle, after which it starts
  // again, empty, on its owners (so that nothing written after the loss
  // sits on nodes the plan does not track).
  std::vector<NodeId> WriteSet(uint32_t partition) const;
  // `partition` lost every copy during this move (plan().lost).
  bool IsLost(uint32_t partition) const;
  std::vector<NodeId> Holders(uint32_t partition) const { return HoldersOf(settled_, target_, partition); }

 private:
  DhtRing settled_, target_;
  Plan plan_;
  std::vector<bool> done_;  // per plan_.transfers
  size_t remaining_ = 0;
};

}  // namespace fox::ebb
