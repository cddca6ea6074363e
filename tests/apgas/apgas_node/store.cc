// apgas_node steps store, store_kill and store_recover: the ResilientStore
// (apgas_node.cc says what they check).
#include <string>
#include <vector>

#include "fox/apgas/store.h"

#include "common.h"

namespace apgas_node {

void Store() {
  auto places = fox::apgas::places();
  auto store = fox::apgas::ResilientStore::Make("test");
  fox::apgas::finish([&] {
    for (Place p : places) {
      fox::apgas::asyncAt(p, [] {
        auto s = fox::apgas::ResilientStore::Make("test");
        uint32_t me = fox::apgas::here().id;
        s.Set("x", uint64_t(me) * 10);
        s.Set("name", std::string("place ") + std::to_string(me));
      });
    }
  });
  int right = 0;
  for (Place p : places) {
    auto x = store.GetRemote<uint64_t>(p, "x");
    auto name = store.GetRemote<std::string>(p, "name");
    right += x && *x == uint64_t(p.id) * 10 && name && *name == "place " + std::to_string(p.id);
  }
  CHECK(right == int(places.size()));
  CHECK(!store.Get<uint64_t>("absent"));
  // Set2 from place 1: its a and place 2's b.
  fox::apgas::at(places[1], [] {
    fox::apgas::ResilientStore::Make("test").Set2("a", 1, Place{2}, "b", std::string("two"));
    return 0;
  });
  auto a = store.GetRemote<int>(places[1], "a");
  auto b = store.GetRemote<std::string>(places[2], "b");
  CHECK(a && *a == 1 && b && *b == "two");
  store.Set("gone", 5);
  store.Delete("gone");
  CHECK(!store.Get<int>("gone"));
  bool long_key = false, bad_name = false;
  try {
    store.Set(std::string(300, 'k'), 1);
  } catch (const std::invalid_argument&) {
    long_key = true;
  }
  try {
    (void)fox::apgas::ResilientStore::Make("a/b");
  } catch (const std::invalid_argument&) {
    bad_name = true;
  }
  CHECK(long_key && bad_name);
  std::printf("apgas: store: %d places' keys read back, Set2 across places 1 and 2, delete, refusals: PASS\n", right);
}

// What place `victim` wrote before it died: the length of the prefix of
// whole rounds, and how many rounds were half (a Set2 with one key).
struct Written {
  uint64_t rounds = 0, half = 0, beyond = 0;
};
Written ReadVictim(fox::apgas::ResilientStore& store, uint32_t victim) {
  Written w;
  uint64_t i = 0;
  for (;; ++i) {
    std::string n = std::to_string(i);
    bool a = store.GetRemote<uint64_t>(Place{victim}, "a." + n).has_value();
    bool b = store.GetRemote<uint64_t>(Place{0}, "b." + n).has_value();
    bool c = store.GetRemote<uint64_t>(Place{victim}, "c." + n).has_value();
    w.half += a != b;
    if (!a && !b && !c) break;
    ++w.rounds;
  }
  for (uint64_t j = i + 1; j < i + 20; ++j) {  // nothing past the first gap
    std::string n = std::to_string(j);
    w.beyond += store.GetRemote<uint64_t>(Place{victim}, "a." + n).has_value() +
                store.GetRemote<uint64_t>(Place{0}, "b." + n).has_value() +
                store.GetRemote<uint64_t>(Place{victim}, "c." + n).has_value();
  }
  return w;
}

void StoreRecover(uint32_t victim) {
  auto store = fox::apgas::ResilientStore::Make("recover");
  bool died = false;
  try {
    fox::apgas::finish([&] {
      fox::apgas::asyncAt(Place{victim}, [] {
        auto s = fox::apgas::ResilientStore::Make("recover");
        s.Set2Partial(3, "p", uint64_t(1), Place{0}, "q", std::string("two"));
        std::printf("apgas_node: place %u dies inside a Set2\n", fox::apgas::here().id);
        std::fflush(stdout);
        std::_Exit(9);
      });
    });
  } catch (const fox::apgas::MultipleExceptions& m) {
    died = m.HasDeadPlace(Place{victim});
  }
  auto p = store.GetRemote<uint64_t>(Place{victim}, "p");
  auto q = store.Get<std::string>("q");
  std::printf(
      "apgas: store: place %u died inside a Set2 (log and first key written): first key %s, second %s when "
      "the finish returned\n",
      victim, p ? "there" : "MISSING", q ? "there (rolled forward)" : "MISSING");
  CHECK(died && p && *p == 1 && q && *q == "two");
}

void StoreKill(uint32_t victim, uint64_t ms) {
  auto store = fox::apgas::ResilientStore::Make("kill");
  bool died = false;
  try {
    fox::apgas::finish([&] {
      fox::apgas::asyncAt(
          Place{victim},
          [](uint64_t delay) {
            DieIn(delay);
            auto s = fox::apgas::ResilientStore::Make("kill");
            for (uint64_t i = 0;; ++i) {
              std::string n = std::to_string(i);
              s.Set2("a." + n, i, Place{0}, "b." + n, i);
              s.Set("c." + n, i);
            }
          },
          ms);
    });
  } catch (const fox::apgas::MultipleExceptions& m) {
    died = m.HasDeadPlace(Place{victim}) && m.exceptions().size() == m.DeadPlaces();
  }
  Written at_return = ReadVictim(store, victim);
  SleepMs(1500);  // a write of the dead place still on its way would land meanwhile
  Written later = ReadVictim(store, victim);
  std::printf(
      "apgas: store: place %u died writing after %llu ms: %llu rounds written, %llu half Set2s, %llu keys past the "
      "first gap, %llu rounds 1.5 s later, DeadPlaceException %s\n",
      victim, (unsigned long long)ms, (unsigned long long)at_return.rounds, (unsigned long long)at_return.half,
      (unsigned long long)at_return.beyond, (unsigned long long)later.rounds, died ? "alone" : "MISSING");
  CHECK(died && at_return.rounds > 0 && at_return.half == 0 && at_return.beyond == 0);
  CHECK(later.rounds == at_return.rounds && later.half == 0 && later.beyond == 0);
}

}  // namespace apgas_node
