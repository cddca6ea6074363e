// Internal: the delegate operations' Ebb at each place (kDelegateId;
// delegate.h is the API, delegate_wire.h the messages). As the home of
// arrays' blocks it applies operations, one message at a time, on its one
// core (the place's first: core 0, where the runtime listens), which makes
// them atomic there; as an issuer it keeps each core's open batches, sends
// them, and settles what it sent when the answer comes or the home dies.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <unordered_map>
#include <vector>

#include "delegate_wire.h"
#include "fox/ebb/ebb_ref.h"
#include "fox/ebb/shared_ebb.h"
#include "fox/ebb/static_ids.h"
#include "fox/future.h"
#include "fox/net/ids.h"
#include "fox/spinlock.h"
#include "runtime.h"

namespace fox::apgas::detail {

class DelegateService : public ebb::SharedEbb<DelegateService> {
 public:
  static ebb::EbbRef<DelegateService> Get() { return ebb::EbbRef<DelegateService>(ebb::kDelegateId); }
  DelegateService();  // listens on the calling core (the home core); before am::Start
  ~DelegateService();

  void Blocking(const DelegateTarget& target, DelegateOp op, DelegateType type, uint64_t fn, const void* args,
                uint32_t arg_bytes, void* result, uint32_t result_bytes);
  void Async(const DelegateTarget& target, DelegateOp op, DelegateType type, uint64_t fn, const void* args,
             uint32_t arg_bytes);

  // The blocks of arrays held here (global_memory.h).
  void AddRegion(uint64_t id, uint64_t count, uint32_t elem_bytes);
  void DropRegion(uint64_t id);
  void* RegionBase(uint64_t id) const;

  void SetBatchBytes(size_t bytes);
  size_t batch_bytes() const { return batch_bytes_.load(std::memory_order_relaxed); }
  delegate::Stats stats() const;

 private:
  struct Region {
    std::shared_ptr<uint8_t[]> bytes;
    uint64_t count = 0;
    uint32_t elem_bytes = 0;
  };
  // Operations of one kind to one place under one finish, not sent yet.
  struct Batch {
    uint32_t place = 0;
    FinishKey finish;
    uint64_t region = 0, fn = 0;
    DelegateOp op = DelegateOp::kWrite;
    DelegateType type = DelegateType::kBytes;
    uint16_t arg_bytes = 0, count = 0;
    std::vector<uint8_t> bytes;  // the header's room, then the operations
  };
  struct CoreBatches {  // touched by its core's events only
    std::vector<Batch> open;
    bool flush_posted = false;
  };
  struct CallState {
    Promise<DelegateStatus> done;
    std::vector<uint8_t> result;
  };
  struct Pending {  // sent, not answered
    uint32_t place = 0;
    FinishKey finish;                 // a batch's
    std::shared_ptr<CallState> call;  // a call's
  };

  void OnMessage(NodeId from, HandlerId handler, const uint8_t* data, size_t length);
  void Apply(NodeId from, HandlerId handler, const uint8_t* data, size_t length);
  void OnAnswer(HandlerId handler, const uint8_t* data, size_t length);
  void OnDeath(uint32_t place);
  // Sends a request; kPeerDead or another error if it could not go.
  Result<void> Send(uint32_t place, HandlerId handler, std::vector<uint8_t> bytes);
  // Sends a batch taken out of its core's list; settles it at once if it
  // cannot go.
  void SendBatch(Batch batch);
  // A batch of `f` that `place`'s death settles: the finish gets one
  // DeadPlaceException per dead place, however many batches it had there.
  void SettleDead(FinishKey f, uint32_t place);
  // Sends this core's open batches (to `place` only, unless kAll).
  static constexpr uint32_t kAll = ~0u;
  void FlushCore(uint32_t place);
  uint64_t NextToken() { return next_token_.fetch_add(1, std::memory_order_relaxed); }
  // Takes the pending entry of `token` (false: none, settled already).
  bool TakePending(uint64_t token, Pending* out);

  const int core_;
  uint64_t subscription_ = 0;
  std::atomic<uint64_t> next_token_{1};
  std::atomic<size_t> batch_bytes_;
  std::vector<CoreBatches> cores_;

  mutable SpinLock lock_;
  std::unordered_map<uint64_t, Region> regions_ GUARDED_BY(lock_);
  std::unordered_map<uint64_t, Pending> pending_ GUARDED_BY(lock_);
  std::set<std::pair<FinishKey, uint32_t>> deaths_told_ GUARDED_BY(lock_);  // SettleDead's
  delegate::Stats stats_ GUARDED_BY(lock_);
};

}  // namespace fox::apgas::detail
