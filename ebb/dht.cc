// The Dht Ebb (dht.h): a façade over this node's part of the Dht
// (dht/node.h, whose files each hold one concept), and the calls built
// from Write: memcached's set and delete, and libFOX's counters.
#include "fox/ebb/dht.h"

#include "dht/node.h"

namespace fox::ebb {

Dht::Dht() : node_(std::make_unique<dht::Node>()) { constructed_.store(this, std::memory_order_release); }

Dht::~Dht() { constructed_.store(nullptr, std::memory_order_release); }

Result<void> Dht::Start(const RingConfig& config, std::vector<NodeId> members, size_t max_bytes) {
  return node_->Start(config, std::move(members), max_bytes);
}

Result<void> Dht::Join(const RingConfig& config, std::vector<NodeId> members, uint64_t timeout_ms, size_t max_bytes) {
  return node_->Join(config, std::move(members), timeout_ms, max_bytes);
}

bool Dht::HoldsCopy(const std::string& key) { return node_->HoldsCopy(key); }
Result<Dht::Item> Dht::Get(const std::string& key) { return node_->Get(key); }
Result<Dht::Item> Dht::Write(DhtWrite write) { return node_->Write(std::move(write)); }
Result<size_t> Dht::Flush(uint32_t delay_s) { return node_->Flush(delay_s); }
Result<Dht::Census> Dht::Count() { return node_->Count(); }
void Dht::Quiesce(NodeId origin) { node_->Quiesce(origin); }
void Dht::SetTombstoneGrace(uint64_t ns) { node_->SetTombstoneGrace(ns); }
std::vector<NodeId> Dht::OwnersOf(const std::string& key) const { return node_->OwnersOf(key); }
std::vector<NodeId> Dht::members() const { return node_->members(); }
uint64_t Dht::epoch() const { return node_->epoch(); }
Dht::Stats Dht::stats() const { return node_->stats(); }
std::vector<uint64_t> Dht::CoreLoad() const { return node_->CoreLoad(); }

Result<uint64_t> Dht::Put(DhtWrite write) {
  auto item = Write(std::move(write));
  if (!item.ok()) return item.error();
  return item->cas;
}

Result<uint64_t> Dht::Set(const std::string& key, const std::string& value, uint32_t flags, uint32_t ttl_s) {
  DhtWrite w;
  w.key = key;
  w.value = value;
  w.flags = flags;
  w.ttl_s = ttl_s;
  return Put(std::move(w));
}

Result<void> Dht::Delete(const std::string& key) {
  DhtWrite w;
  w.mode = DhtWrite::Mode::kDelete;
  w.key = key;
  auto r = Write(w);
  if (!r.ok()) return r.error();
  return Ok();
}

namespace {
Result<uint64_t> CountOf(Result<Dht::Item> item) {
  if (!item.ok()) return item.error();
  uint64_t n = 0;
  if (!DhtParseCounter(item->value, &n)) return Error::kCorrupt;
  return n;
}
}  // namespace

Result<uint64_t> Dht::Add(const std::string& key, uint64_t delta) {
  DhtWrite w;
  w.mode = DhtWrite::Mode::kIncr;
  w.key = key;
  w.delta = delta;
  w.create = true;
  w.initial = delta;
  return CountOf(Write(w));
}

Result<uint64_t> Dht::Take(const std::string& key, uint64_t n, uint32_t wait_ms) {
  DhtWrite w;
  w.mode = DhtWrite::Mode::kTake;
  w.key = key;
  w.delta = n;
  w.wait_ms = wait_ms;
  return CountOf(Write(w));
}

Result<Dht::Item> Dht::WaitFor(const std::string& key, uint64_t at_least, uint32_t wait_ms) {
  DhtWrite w;
  w.mode = DhtWrite::Mode::kWait;
  w.key = key;
  w.delta = at_least;
  w.wait_ms = wait_ms;
  return Write(w);
}

}  // namespace fox::ebb
