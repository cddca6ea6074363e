// The calling side (node.h): a call goes to the key's primary in the
// caller's ring (its shard's Ebb there), or to the shard here when this
// node is the primary (serve.cc); it is retried while rings disagree
// (kBusy), and once on the next primary when the primary dies before
// answering (dht.h, "Failure").
#include <algorithm>

#include "fox/clock.h"
#include "fox/ebb/static_ids.h"
#include "fox/net/am.h"
#include "fox/net/wire.h"
#include "fox/timer.h"
#include "node.h"

namespace fox::ebb::dht {

Result<std::vector<uint8_t>> Node::Call(uint64_t key_hash, HandlerId handler, const std::vector<uint8_t>& body,
                                        uint64_t rpc_timeout_ms) {
  uint64_t deadline = clock::NowNs() + Dht::kRouteTimeoutMs * 1'000'000;
  bool retried_dead = false;
  for (bool first = true;; first = false) {
    if (!first) Count(&Stats::retries);
    const DhtRing* ring = CallersRing();
    if (!ring || ring->nodes().empty()) return Error::kBusy;
    NodeId primary = ring->PrimaryOf(key_hash);
    auto reply = primary == am::Self() ? CallLocal(key_hash, handler, body)
                                       : Rpc::Get()
                                             ->Call(primary, kDhtShardIds[Dht::ShardOf(key_hash)], handler, body.data(),
                                                    body.size(), rpc_timeout_ms)
                                             .Block();
    if (!reply.ok()) {
      if (reply.error() == Error::kNotFound) {
        // Not joined yet (Rpc refuses nodes it has not seen alive).
        if (clock::NowNs() >= deadline) return Error::kTimedOut;
        timer::Sleep(kRetryNs);
        continue;
      }
      // The primary died before answering: once, on the next primary, when
      // this node's ring has dropped it.
      if (reply.error() != Error::kPeerDead) return reply.error();
      if (retried_dead) return Error::kPeerDead;
      retried_dead = true;
      if (!SleepUntil([&] { return !rings_.ring()->Contains(primary); }, deadline)) return Error::kTimedOut;
      continue;
    }
    if (reply->size() < 4) return Error::kCorrupt;
    auto status = Error(net::wire::Load32(reply->data()));
    if (status == Error::kBusy) {  // not the primary there: its ring differs from ours
      if (clock::NowNs() >= deadline) return Error::kTimedOut;
      timer::Sleep(kRetryNs);
      continue;
    }
    if (status != Error::kOk) return status;
    reply->erase(reply->begin(), reply->begin() + 4);  // in place: no second buffer
    return std::move(*reply);
  }
}

Result<Dht::Item> Node::Get(const std::string& key) {
  if (!KeyOk(key)) return Error::kInvalidArgument;
  uint64_t hash = HashOf(key);
  if (auto here = GetHere(key, hash)) return std::move(*here);
  auto reply = Call(hash, kGet, std::vector<uint8_t>(key.begin(), key.end()));
  if (!reply.ok()) return reply.error();
  auto entry = dht_wire::DecodeItem(reply->data(), reply->size());
  if (!entry.ok()) return Error::kCorrupt;
  return Item{std::move(entry->value), entry->flags, entry->version};
}

Result<Dht::Item> Node::Write(DhtWrite write) {
  if (!KeyOk(write.key) || write.value.size() > kDhtMaxValue || write.mode > DhtWrite::kLastMode) {
    return Error::kInvalidArgument;
  }
  // A held request answers within wait_ms (the primary's sweep): the Rpc
  // waits that long and a margin.
  uint64_t rpc_timeout_ms = DhtWriteWaits(write.mode) ? uint64_t(write.wait_ms) + 10'000 : 10'000;
  // Named, so that a new primary answers it from the key's record if the
  // dead one's replicas hold it (exactly once: dht_items.h). `write` is the
  // caller's copy (or what it moved in).
  if (write.request == 0) {
    // (node << 40) | count, the count from this core's block (one shared
    // read-modify-write per kRequestBlock writes).
    PerCore& mine = per_core_[core::Current()];
    if (mine.next_request == mine.end_request) {
      mine.next_request = next_request_.fetch_add(kRequestBlock, std::memory_order_relaxed);
      mine.end_request = mine.next_request + kRequestBlock;
    }
    uint64_t count = mine.next_request++ & ((uint64_t(1) << 40) - 1);
    write.request = (uint64_t(am::Self()) << 40) | (count == 0 ? 1 : count);
  }
  uint64_t hash = HashOf(write.key);
  if (auto here = WriteHere(write, hash)) return std::move(*here);
  auto reply = Call(hash, kWrite, dht_wire::EncodeWrite(write), rpc_timeout_ms);
  if (!reply.ok()) return reply.error();
  if (DhtWriteAnswersItem(write.mode)) {
    auto entry = dht_wire::DecodeItem(reply->data(), reply->size());
    if (!entry.ok()) return Error::kCorrupt;
    return Item{std::move(entry->value), entry->flags, entry->version};
  }
  if (reply->size() != 8) return Error::kCorrupt;
  return Item{{}, 0, net::wire::Load64(reply->data())};
}

std::vector<std::vector<uint8_t>> Node::AskEveryNode(HandlerId handler, const std::vector<uint8_t>& body, size_t* asked,
                                                     Error* last_error) {
  std::vector<std::vector<uint8_t>> answers;
  *asked = 0;
  *last_error = Error::kBusy;
  auto ring = rings_.ring();
  if (!ring) return answers;
  std::vector<Future<Result<Rpc::Bytes>>> calls;
  for (NodeId n : ring->nodes()) calls.push_back(Rpc::Get()->Call(n, kDhtId, handler, body.data(), body.size()));
  *asked = calls.size();
  for (auto& call : calls) {
    auto r = call.Block();
    if (StatusOf(r) == Error::kOk) {
      answers.emplace_back(r->begin() + 4, r->end());
    } else {
      *last_error = r.ok() ? Error::kCorrupt : r.error();
    }
  }
  return answers;
}

bool Node::AllAcknowledge(const std::vector<NodeId>& nodes, EbbId ebb, HandlerId handler,
                          const std::vector<uint8_t>& body, uint64_t timeout_ms) {
  std::vector<Future<Result<Rpc::Bytes>>> calls;
  for (NodeId n : nodes) calls.push_back(Rpc::Get()->Call(n, ebb, handler, body.data(), body.size(), timeout_ms));
  bool all = true;
  for (auto& call : calls) all &= StatusOf(call.Block()) == Error::kOk;
  return all;
}

Result<size_t> Node::Flush(uint32_t delay_s) {
  std::vector<uint8_t> body(4);
  net::wire::StoreLe<uint32_t>(body.data(), delay_s);
  size_t asked;
  Error last;
  auto answers = AskEveryNode(kFlush, body, &asked, &last);
  if (answers.empty()) return last;
  return answers.size();
}

Result<Dht::Census> Node::Count() {
  Census census;
  Error last;
  auto answers = AskEveryNode(kCount, {}, &census.asked, &last);
  for (const auto& a : answers) {
    if (a.size() != 16) continue;
    census.items += net::wire::Load64(a.data());
    census.bytes += net::wire::Load64(a.data() + 8);
    ++census.nodes;
  }
  if (census.nodes == 0) return answers.empty() ? last : Error::kCorrupt;
  return census;
}

}  // namespace fox::ebb::dht
