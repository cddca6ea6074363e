// DhtTable (ebb/include/fox/ebb/dht_table.h): the owner's map, and reads
// from other threads while the owner changes it.
#include "fox/ebb/dht_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace fox::ebb {
namespace {

DhtEntry Entry(uint64_t version, std::string value) {
  DhtEntry e;
  e.version = version;
  e.value = std::move(value);
  return e;
}

TEST(DhtTable, PutFindEraseAgreeWithAMapThroughGrowthAndRemovals) {
  DhtTable table;
  std::map<std::string, uint64_t> model;
  std::mt19937_64 rng(7);
  for (int step = 0; step < 60000; ++step) {
    std::string key = "k" + std::to_string(rng() % 5000);
    switch (rng() % 4) {
      case 0:
      case 1: {
        uint64_t version = step + 1;
        auto found = model.find(key);
        DhtTable::Replaced was = table.Put(key, Entry(version, key + "=" + std::to_string(version)));
        ASSERT_EQ(was.existed, found != model.end());
        if (was.existed) {
          EXPECT_EQ(was.value_bytes, (key + "=" + std::to_string(found->second)).size());
        }
        model[key] = version;
        break;
      }
      case 2: ASSERT_EQ(table.Erase(key), model.erase(key) == 1); break;
      case 3: {
        const DhtEntry* e = table.Find(key);
        auto found = model.find(key);
        ASSERT_EQ(e != nullptr, found != model.end()) << key;
        if (e) EXPECT_EQ(e->version, found->second);
        break;
      }
    }
    ASSERT_EQ(table.size(), model.size());
  }
  size_t seen = 0;
  table.ForEach([&](const std::string& key, const DhtEntry& e) {
    ++seen;
    EXPECT_EQ(model.at(key), e.version);
    EXPECT_EQ(e.value, key + "=" + std::to_string(e.version));
  });
  EXPECT_EQ(seen, model.size());
  EXPECT_EQ(table.Find(""), nullptr);
  DhtTable moved = std::move(table);
  EXPECT_EQ(moved.size(), model.size());
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(table.Find(model.begin()->first), nullptr);
}

// What the owner retires, kept until the readers are gone (as a quiescent
// scheme would keep it while they may read it).
std::mutex g_retired_lock;
std::vector<std::pair<void*, void (*)(void*)>> g_retired;
void KeepUntilReadersAreDone(void* object, void (*free)(void*)) {
  std::lock_guard<std::mutex> guard(g_retired_lock);
  g_retired.push_back({object, free});
}

TEST(DhtTable, ReadersOnOtherThreadsSeeWholeEntriesWhileTheOwnerWrites) {
  DhtTable table;
  table.set_retire(KeepUntilReadersAreDone);
  constexpr int kKeys = 2000;
  std::atomic<bool> done{false};
  std::atomic<uint64_t> torn{0}, found{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&, r] {
      std::mt19937_64 rng(r);
      while (!done.load(std::memory_order_relaxed)) {
        std::string key = "key" + std::to_string(rng() % kKeys);
        if (const DhtEntry* e = table.Find(key)) {
          found.fetch_add(1, std::memory_order_relaxed);
          // Each value names its key and version: a torn or mixed entry would not.
          if (e->value != key + "@" + std::to_string(e->version)) torn.fetch_add(1);
        }
      }
    });
  }
  std::mt19937_64 rng(99);
  for (uint64_t version = 1; version <= 200000; ++version) {
    std::string key = "key" + std::to_string(rng() % kKeys);
    if (rng() % 8 == 0) {
      table.Erase(key);  // markers, and rebuilds that sweep them
    } else {
      table.Put(key, Entry(version, key + "@" + std::to_string(version)));
    }
  }
  done.store(true);
  for (auto& t : readers) t.join();
  EXPECT_EQ(torn.load(), 0u);
  EXPECT_GT(found.load(), 0u);
  std::lock_guard<std::mutex> guard(g_retired_lock);
  EXPECT_GT(g_retired.size(), 0u);
  for (auto& [object, free] : g_retired) free(object);
  g_retired.clear();
}

}  // namespace
}  // namespace fox::ebb
