// Delegate operations (delegate.h) and global arrays' blocks
// (global_memory.h): the functions' table, the regions, and the
// DelegateService (delegate_service.h) that issues and applies them.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "delegate_service.h"
#include "fox/core.h"
#include "fox/ebb/messenger.h"
#include "fox/event.h"
#include "fox/log.h"
#include "fox/net/am.h"
#include "fox/net/am_frame.h"

namespace fox::apgas {
namespace detail {
namespace {

std::atomic<uint64_t> g_next_region{1};

[[noreturn]] void Refused(uint32_t place, DelegateStatus status) {
  throw std::runtime_error("delegate: place " + std::to_string(place) +
                           " refused the operation: " + DelegateStatusName(status));
}

std::exception_ptr RefusedError(uint32_t place, uint32_t refused, DelegateStatus status) {
  return std::make_exception_ptr(std::runtime_error("delegate: place " + std::to_string(place) + " refused " +
                                                    std::to_string(refused) +
                                                    " operation(s): " + DelegateStatusName(status)));
}

template <class T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace

uint64_t NewRegionId() { return uint64_t(here().id) << 40 | g_next_region.fetch_add(1); }
void AddRegion(uint64_t id, uint64_t count, uint32_t elem_bytes) {
  DelegateService::Get()->AddRegion(id, count, elem_bytes);
}
void DropRegion(uint64_t id) { DelegateService::Get()->DropRegion(id); }
void* RegionBase(uint64_t id) { return DelegateService::Get()->RegionBase(id); }

void DelegateBlocking(const DelegateTarget& target, DelegateOp op, DelegateType type, uint64_t fn, const void* args,
                      uint32_t arg_bytes, void* result, uint32_t result_bytes) {
  DelegateService::Get()->Blocking(target, op, type, fn, args, arg_bytes, result, result_bytes);
}

void DelegateAsync(const DelegateTarget& target, DelegateOp op, DelegateType type, uint64_t fn, const void* args,
                   uint32_t arg_bytes) {
  DelegateService::Get()->Async(target, op, type, fn, args, arg_bytes);
}

// ---- the service ----

DelegateService::DelegateService()
    : core_(core::Current()), batch_bytes_(net::kMaxMessageBytes), cores_(size_t(core::kMaxCores)) {
  auto on_message = [this](NodeId from, HandlerId handler, const uint8_t* data, size_t length) {
    OnMessage(from, handler, data, length);
  };
  if (auto r = ebb::Messenger::Get()->ListenAny(ebb::kDelegateId, on_message, core_); !r.ok()) {
    LOG_ERROR("apgas: delegates cannot receive messages: %s", ErrorName(r.error()));
  }
  subscription_ = am::OnPeerState(
      [this](NodeId node, am::PeerState state) {
        if (state == am::PeerState::kDead) OnDeath(node);
      },
      core_);
}

DelegateService::~DelegateService() {
  am::StopPeerState(subscription_);
  ebb::Messenger::Get()->StopListeningAny(ebb::kDelegateId);
}

void DelegateService::AddRegion(uint64_t id, uint64_t count, uint32_t elem_bytes) {
  if (elem_bytes == 0 || count > (uint64_t(1) << 48) / elem_bytes) throw std::length_error("GlobalArray: too large");
  Region region;
  region.bytes = std::shared_ptr<uint8_t[]>(new uint8_t[std::max<uint64_t>(1, count * elem_bytes)]());
  region.count = count;
  region.elem_bytes = elem_bytes;
  SpinGuard g(lock_);
  regions_[id] = std::move(region);
}

void DelegateService::DropRegion(uint64_t id) {
  std::shared_ptr<uint8_t[]> gone;  // freed outside the lock
  SpinGuard g(lock_);
  auto it = regions_.find(id);
  if (it == regions_.end()) return;
  gone = std::move(it->second.bytes);
  regions_.erase(it);
}

void* DelegateService::RegionBase(uint64_t id) const {
  SpinGuard g(lock_);
  auto it = regions_.find(id);
  return it == regions_.end() || it->second.count == 0 ? nullptr : it->second.bytes.get();
}

void DelegateService::SetBatchBytes(size_t bytes) {
  size_t least = kDelegateHeaderBytes;  // a batch then holds one operation
  batch_bytes_.store(std::clamp(bytes, least, ebb::Messenger::kMaxLargeBytes), std::memory_order_relaxed);
}

delegate::Stats DelegateService::stats() const {
  SpinGuard g(lock_);
  return stats_;
}

// ---- issuing ----

Result<void> DelegateService::Send(uint32_t place, HandlerId handler, std::vector<uint8_t> bytes) {
  // Past one message, every request goes large, so that one event's requests
  // to a place keep their order (a small one could overtake a large one).
  if (batch_bytes() > net::kMaxMessageBytes) {
    return ebb::Messenger::Get()->SendLarge(place, ebb::kDelegateId, handler, std::move(bytes));
  }
  return ebb::Messenger::Get()->SendWait(place, ebb::kDelegateId, handler, bytes.data(), bytes.size());
}

bool DelegateService::TakePending(uint64_t token, Pending* out) {
  SpinGuard g(lock_);
  auto it = pending_.find(token);
  if (it == pending_.end()) return false;
  *out = std::move(it->second);
  pending_.erase(it);
  return true;
}

void DelegateService::Blocking(const DelegateTarget& target, DelegateOp op, DelegateType type, uint64_t fn,
                               const void* args, uint32_t arg_bytes, void* result, uint32_t result_bytes) {
  if (isDead(Place{target.place})) throw DeadPlaceException(Place{target.place});
  FlushCore(target.place);  // this core's batches to the place go first
  DelegateHeader h;
  h.token = NextToken();
  h.region = target.region;
  h.fn = fn;
  h.count = 1;
  h.op = op;
  h.type = type;
  h.arg_bytes = uint16_t(arg_bytes);
  h.result_bytes = uint16_t(result_bytes);
  std::vector<uint8_t> bytes(kDelegateHeaderBytes + 8 + arg_bytes);
  StoreDelegateHeader(bytes.data(), h);
  std::memcpy(bytes.data() + kDelegateHeaderBytes, &target.index, 8);
  if (arg_bytes != 0) std::memcpy(bytes.data() + kDelegateHeaderBytes + 8, args, arg_bytes);
  auto call = std::make_shared<CallState>();
  auto done = call->done.GetFuture();
  {
    SpinGuard g(lock_);
    pending_[h.token] = Pending{target.place, FinishKey{}, call};
    ++stats_.calls_sent;
  }
  if (auto r = Send(target.place, kDelegateCall, std::move(bytes)); !r.ok()) {
    Pending gone;
    if (TakePending(h.token, &gone)) {
      if (r.error() != Error::kPeerDead) {
        throw std::runtime_error("delegate: cannot send to place " + std::to_string(target.place) + ": " +
                                 ErrorName(r.error()));
      }
      gone.call->done.SetValue(DelegateStatus::kDead);
    }
  }
  void* activity = event::Local();
  DelegateStatus status = done.Block();
  event::Local() = activity;
  if (status == DelegateStatus::kDead) throw DeadPlaceException(Place{target.place});
  if (status != DelegateStatus::kOk) Refused(target.place, status);
  if (call->result.size() != result_bytes) Refused(target.place, DelegateStatus::kBadOp);  // not our home's answer
  if (result_bytes != 0) std::memcpy(result, call->result.data(), result_bytes);
}

void DelegateService::Async(const DelegateTarget& target, DelegateOp op, DelegateType type, uint64_t fn,
                            const void* args, uint32_t arg_bytes) {
  Activity* activity = Current();
  if (activity == nullptr) throw std::logic_error("delegate: an asynchronous operation outside an activity");
  FinishKey f = activity->finish;
  auto runtime = Runtime::Get();
  const size_t op_bytes = 8 + size_t(arg_bytes), limit = batch_bytes();
  CoreBatches& mine = cores_[size_t(core::Current())];
  auto find = [&]() -> Batch* {
    for (auto it = mine.open.rbegin(); it != mine.open.rend(); ++it) {
      if (it->place == target.place && it->finish == f && it->region == target.region && it->op == op &&
          it->type == type && it->fn == fn && it->arg_bytes == arg_bytes) {
        return &*it;
      }
    }
    return nullptr;
  };
  Batch* batch = find();
  if (batch != nullptr && (batch->bytes.size() + op_bytes > limit || batch->count == UINT16_MAX)) {
    Batch full = std::move(*batch);
    mine.open.erase(mine.open.begin() + (batch - mine.open.data()));
    SendBatch(std::move(full));  // may block: the list may change meanwhile
    batch = find();
  }
  if (batch == nullptr) {
    // Known dead: the activity learns it at once (and ends, unless it
    // catches it), rather than its finish once per operation. (Checked per
    // batch: one that dies meanwhile settles the batches sent to it.)
    if (isDead(Place{target.place})) throw DeadPlaceException(Place{target.place});
    runtime->Spawned(f);  // the batch holds the finish open until it is settled
    Batch b;
    b.place = target.place;
    b.finish = f;
    b.region = target.region;
    b.fn = fn;
    b.op = op;
    b.type = type;
    b.arg_bytes = uint16_t(arg_bytes);
    b.bytes.reserve(std::min(limit, size_t(64) << 10));
    b.bytes.resize(kDelegateHeaderBytes);
    mine.open.push_back(std::move(b));
    batch = &mine.open.back();
  }
  size_t at = batch->bytes.size();
  batch->bytes.resize(at + op_bytes);
  std::memcpy(batch->bytes.data() + at, &target.index, 8);
  if (arg_bytes != 0) std::memcpy(batch->bytes.data() + at + 8, args, arg_bytes);
  ++batch->count;
  if (!mine.flush_posted) {  // sent when the activity ends or blocks, if not full before
    mine.flush_posted = true;
    event::Spawn([this] { FlushCore(kAll); });
  }
}

void DelegateService::FlushCore(uint32_t place) {
  CoreBatches& mine = cores_[size_t(core::Current())];
  std::vector<Batch> going;
  if (place == kAll) {
    going.swap(mine.open);
    mine.flush_posted = false;
  } else {
    for (size_t i = 0; i < mine.open.size();) {
      if (mine.open[i].place == place) {
        going.push_back(std::move(mine.open[i]));
        mine.open.erase(mine.open.begin() + long(i));
      } else {
        ++i;
      }
    }
  }
  for (Batch& b : going) SendBatch(std::move(b));
}

void DelegateService::SendBatch(Batch batch) {
  DelegateHeader h;
  h.token = NextToken();
  h.region = batch.region;
  h.fn = batch.fn;
  h.count = batch.count;
  h.op = batch.op;
  h.type = batch.type;
  h.arg_bytes = batch.arg_bytes;
  StoreDelegateHeader(batch.bytes.data(), h);
  {
    SpinGuard g(lock_);
    pending_[h.token] = Pending{batch.place, batch.finish, nullptr};
    ++stats_.batches_sent;
    stats_.ops_sent += batch.count;
  }
  auto r = Send(batch.place, kDelegateBatch, std::move(batch.bytes));
  Pending gone;
  if (!r.ok() && TakePending(h.token, &gone)) {
    if (r.error() == Error::kPeerDead) return SettleDead(gone.finish, batch.place);
    Runtime::Get()->Done(gone.finish, std::make_exception_ptr(std::runtime_error("delegate: cannot send to place " +
                                                                                 std::to_string(batch.place) + ": " +
                                                                                 ErrorName(r.error()))));
  }
}

void DelegateService::SettleDead(FinishKey f, uint32_t place) {
  bool first;
  {
    SpinGuard g(lock_);
    first = deaths_told_.insert({f, place}).second;
  }
  Runtime::Get()->Done(f, first ? std::make_exception_ptr(DeadPlaceException(Place{place})) : nullptr);
}

void DelegateService::OnDeath(uint32_t place) {
  std::vector<Pending> gone;
  {
    SpinGuard g(lock_);
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->second.place == place) {
        gone.push_back(std::move(it->second));
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (Pending& p : gone) {
    if (p.call) {
      p.call->done.SetValue(DelegateStatus::kDead);
    } else {
      SettleDead(p.finish, place);
    }
  }
}

// ---- the home, and answers ----

void DelegateService::OnMessage(NodeId from, HandlerId handler, const uint8_t* data, size_t length) {
  if (handler == kDelegateBatch || handler == kDelegateCall) return Apply(from, handler, data, length);
  if (handler == kDelegateAck || handler == kDelegateResult) return OnAnswer(handler, data, length);
  SpinGuard g(lock_);
  ++stats_.malformed;
}

void DelegateService::Apply(NodeId from, HandlerId handler, const uint8_t* data, size_t length) {
  DelegateHeader h;
  const char* why = nullptr;
  DelegateStatus first = DelegateStatus::kOk;
  uint32_t refused = 0;
  uint8_t answer[kDelegateResultHeaderBytes + kMaxDelegateResultBytes];
  std::memset(answer, 0, kDelegateResultHeaderBytes);  // the rest is written before it is sent
  bool ok = ReadDelegateHeader(data, length, &h, &why);
  if (ok && (handler == kDelegateCall ? h.count != 1 : h.result_bytes != 0)) {
    ok = false;
    why = handler == kDelegateCall ? "a call of several operations" : "a batch with results";
  }
  if (!ok) {
    // Not a request this runtime makes: refused whole, answered if it names
    // a token (one of ours that a fault garbled must not hang its issuer).
    LOG_WARN("apgas: malformed delegate request from place %u (%zu bytes): %s", from, length, why);
    {
      SpinGuard g(lock_);
      ++stats_.malformed;
    }
    if (length < 8) return;
    h.token = Load<uint64_t>(data);
    h.count = 1;
    h.result_bytes = 0;
    first = DelegateStatus::kBadOp;
    refused = 1;
  } else {
    Region region;
    {
      SpinGuard g(lock_);
      auto it = regions_.find(h.region);
      if (it != regions_.end()) region = it->second;  // kept alive while applied
    }
    const DelegateFn* fn = h.op == DelegateOp::kCall ? FindDelegateFn(h.fn) : nullptr;
    if (region.bytes == nullptr) {
      first = DelegateStatus::kNoRegion;
      refused = h.count;
    } else {
      RegionView view{region.bytes.get(), region.count, region.elem_bytes};
      refused = ApplyDelegates(h, data, view, fn, answer + kDelegateResultHeaderBytes, &first);
    }
    SpinGuard g(lock_);
    ++stats_.batches_applied;
    stats_.ops_applied += h.count - refused;
    stats_.ops_refused += refused;
  }
  std::memcpy(answer, &h.token, 8);
  size_t n;
  if (handler == kDelegateCall) {
    answer[8] = uint8_t(first);
    n = kDelegateResultHeaderBytes + (first == DelegateStatus::kOk ? h.result_bytes : 0);
  } else {
    std::memcpy(answer + 8, &refused, 4);
    answer[12] = uint8_t(first);
    n = kDelegateAckBytes;
  }
  (void)ebb::Messenger::Get()->SendWait(from, ebb::kDelegateId,
                                        handler == kDelegateCall ? kDelegateResult : kDelegateAck, answer, n);
}

void DelegateService::OnAnswer(HandlerId handler, const uint8_t* data, size_t length) {
  if (length < 16) {
    SpinGuard g(lock_);
    ++stats_.malformed;
    return;
  }
  Pending p;
  if (!TakePending(Load<uint64_t>(data), &p)) return;  // settled already (its home died)
  if (handler == kDelegateResult) {
    if (!p.call) {  // a result for a batch: not our home's answer; the batch is settled, not left open
      Runtime::Get()->Done(p.finish, RefusedError(p.place, 1, DelegateStatus::kBadOp));
      return;
    }
    auto status = DelegateStatus(data[8]);
    if (status == DelegateStatus::kOk) p.call->result.assign(data + kDelegateResultHeaderBytes, data + length);
    p.call->done.SetValue(status);
    return;
  }
  if (p.call) {  // an ack for a call: cannot happen with our own messages
    p.call->done.SetValue(DelegateStatus::kBadOp);
    return;
  }
  uint32_t refused = Load<uint32_t>(data + 8);
  Runtime::Get()->Done(p.finish, refused == 0 ? nullptr : RefusedError(p.place, refused, DelegateStatus(data[12])));
}

}  // namespace detail

namespace delegate {
void SetBatchBytes(size_t bytes) { detail::DelegateService::Get()->SetBatchBytes(bytes); }
size_t BatchBytes() { return detail::DelegateService::Get()->batch_bytes(); }
Stats stats() { return detail::DelegateService::Get()->stats(); }
}  // namespace delegate

}  // namespace fox::apgas
