// libFuzzer: the Dht's wire decoders and item map
// (ebb/include/fox/ebb/dht_items.h). The first byte picks the decoder
// (write, replicate, item, key and collect); what decodes is encoded again
// and must decode to the same thing (collect: the same bytes), and writes,
// replicated states and collects are applied to one DhtItems (with a byte
// limit, flushed now and then, its old tombstones collected or requeued now
// and then). Checks: no crash, no sanitizer report, sizes within the limits,
// versions that only grow, only exact tombstones collected, and the map's
// byte, item and tombstone counts equal to a recount.
#include <cstddef>
#include <algorithm>
#include <cstdint>

#include "fox/ebb/dht_items.h"

using namespace fox::ebb;

namespace {
DhtItems g_items;  // across inputs too: versions keep growing

void CheckCounts() {
  size_t bytes = 0, stored = 0;
  g_items.ForEach([&](const std::string& key, const DhtEntry& e) {
    bytes += key.size() + e.value.size();
    stored += e.tombstone ? 0 : 1;
    if (e.tombstone && !e.value.empty()) __builtin_trap();
  });
  if (bytes != g_items.bytes() || stored != g_items.stored()) __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  uint8_t pick = data[0] % 4;
  const uint8_t* body = data + 1;
  size_t length = size - 1;
  uint64_t now = uint64_t(data[0]) * 1'000'000'000;
  if (g_items.size() > 4096) g_items = DhtItems();
  g_items.set_limit((data[0] & 0x30) == 0x30 ? 4 << 20 : 0);
  if (pick == 0) {
    auto w = dht_wire::DecodeWrite(body, length);
    if (!w.ok()) return 0;
    if (w->key.empty() || w->key.size() > kDhtMaxKey || w->value.size() > kDhtMaxValue) __builtin_trap();
    auto again = dht_wire::EncodeWrite(*w);
    auto back = dht_wire::DecodeWrite(again.data(), again.size());
    if (!back.ok() || back->key != w->key || back->value != w->value || back->cas != w->cas ||
        back->request != w->request) {
      __builtin_trap();
    }
    const DhtEntry* held = g_items.Held(w->key);
    uint64_t before = held ? held->version : 0;
    uint64_t deduplicated = g_items.deduplicated();
    auto stored = g_items.Write(*w, now);
    if (g_items.deduplicated() != deduplicated) {  // its request was applied before: nothing changes
      if (!stored.ok() || stored->version > before || g_items.Held(w->key)->version != before) __builtin_trap();
    } else if (stored.ok() && w->mode == DhtWrite::Mode::kWait) {  // a wait changes nothing
      if (stored->version != before || g_items.Held(w->key)->version != before) __builtin_trap();
    } else if (stored.ok() && stored->version <= before) {
      __builtin_trap();
    }
    if (stored.ok() && w->request != 0 && w->mode != DhtWrite::Mode::kWait) {  // exactly once: sent again
      uint64_t held_version = g_items.Held(w->key)->version;
      auto again_stored = g_items.Write(*w, now);
      if (!again_stored.ok() || again_stored->version != stored->version ||
          g_items.Held(w->key)->version != held_version) {
        __builtin_trap();
      }
    }
  } else if (pick == 1) {
    auto r = dht_wire::DecodeReplicate(body, length, now);
    if (!r.ok()) return 0;
    if (r->entry.version == 0 || (r->entry.tombstone && !r->entry.value.empty())) __builtin_trap();
    auto again = dht_wire::EncodeReplicate(r->key, r->entry, now);
    auto back = dht_wire::DecodeReplicate(again.data(), again.size(), now);
    if (!back.ok() || back->key != r->key || back->entry.version != r->entry.version ||
        back->entry.applied != r->entry.applied) {
      __builtin_trap();
    }
    const DhtEntry* held = g_items.Held(r->key);
    uint64_t before = held ? held->version : 0;
    g_items.Apply(r->key, r->entry, (data[0] & 4) != 0);
    if (g_items.Held(r->key)->version < before) __builtin_trap();
  } else if (pick == 2) {
    auto e = dht_wire::DecodeItem(body, length);
    if (e.ok() && e->value.size() > kDhtMaxValue) __builtin_trap();
  } else {
    auto k = dht_wire::DecodeKey(body, length);
    if (k.ok()) (void)g_items.Delete(*k, now);
    if ((data[0] & 0xc0) == 0xc0) g_items.Flush();
    // The same bytes as a kCollect: what decodes encodes back alike and is
    // collected (only exact tombstones go); then every old tombstone is
    // collected or requeued, and the numbering stays exact.
    auto c = dht_wire::DecodeCollect(body, length);
    if (c.ok()) {
      auto again = dht_wire::EncodeCollect(*c);
      if (again.size() != length || !std::equal(again.begin(), again.end(), body)) __builtin_trap();
      for (const auto& t : *c) {
        const DhtEntry* held = g_items.Held(t.key);
        bool exact = held && held->tombstone && held->version == t.version;
        if (g_items.Collect(t.key, t.version) != exact) __builtin_trap();
      }
    }
    if ((data[0] & 0xc0) == 0x80) {
      for (const auto& t : g_items.OldTombstones(g_items.generation())) {
        if (t.version & 1) {
          if (!g_items.Collect(t.key, t.version)) __builtin_trap();
        } else {
          g_items.Requeue(t.key);
        }
      }
      size_t tombs = 0;
      g_items.ForEach([&](const std::string&, const DhtEntry& e) { tombs += e.tombstone ? 1 : 0; });
      if (tombs != g_items.tombstones()) __builtin_trap();
    }
  }
  CheckCounts();
  return 0;
}
