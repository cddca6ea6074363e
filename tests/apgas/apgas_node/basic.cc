// apgas_node steps basic and global (apgas_node.cc says what they check).
#include <string>
#include <vector>

#include "fox/apgas/global.h"

#include "common.h"

namespace apgas_node {

void Basic() {
  auto places = fox::apgas::places();
  uint64_t n = places.size();
  std::printf("apgas: %llu places\n", (unsigned long long)n);

  // Nested finish with local asyncs: every inner one done when its finish returns.
  g_local = 0;
  fox::apgas::finish([] {
    for (int i = 0; i < 10; ++i) {
      fox::apgas::async([] {
        fox::apgas::finish([] {
          for (int j = 0; j < 10; ++j) fox::apgas::async([] { g_local.fetch_add(1); });
        });
        g_local.fetch_add(1000);
      });
    }
  });
  CHECK(g_local.load() == 10 * 1000 + 100);

  // Fan-out with a message back: each place sends an activity back to place 0.
  g_arrived = 0;
  fox::apgas::finish([&] {
    for (Place p : places) {
      fox::apgas::asyncAt(p, [] { fox::apgas::asyncAt(Place{0}, [] { Arrive(); }); });
    }
  });
  CHECK(g_arrived.load() == n);
  std::printf("apgas: fan-out to %llu places, %llu messages back before the finish returned\n", (unsigned long long)n,
              (unsigned long long)g_arrived.load());

  // Fan-out fan-out: every place spawns at every place, each sends one back.
  g_arrived = 0;
  fox::apgas::finish([&] {
    for (Place p : places) {
      fox::apgas::asyncAt(
          p,
          [](std::vector<Place> all) {
            for (Place q : all) fox::apgas::asyncAt(q, [] { fox::apgas::asyncAt(Place{0}, [] { Arrive(); }); });
          },
          places);
    }
  });
  CHECK(g_arrived.load() == n * n);
  std::printf("apgas: fan-out fan-out: %llu activities back at place 0\n", (unsigned long long)g_arrived.load());

  // at: values and strings both ways.
  for (Place p : places) {
    int v = fox::apgas::at(
        p, [](int x) { return x * 2 + int(fox::apgas::here().id); }, 21);
    CHECK(v == 42 + int(p.id));
    std::string s = fox::apgas::at(
        p, [](std::string w) { return w + " from " + std::to_string(fox::apgas::here().id); }, std::string("hello"));
    CHECK(s == "hello from " + std::to_string(p.id));
  }
  std::printf("apgas: at returned values from %llu places\n", (unsigned long long)n);

  // at rethrows the remote exception, by type name and message.
  Place last = places.back();
  bool caught = false;
  try {
    (void)fox::apgas::at(last, []() -> int { throw std::invalid_argument("no such thing"); });
  } catch (const fox::apgas::RemoteException& e) {
    caught = e.type() == "std::invalid_argument" && std::string(e.what()) == "no such thing" && e.place() == last;
  } catch (const std::invalid_argument&) {
    caught = last.id == 0;  // at(here) runs directly
  }
  CHECK(caught);

  // finish gathers every activity's exception.
  bool gathered = false;
  try {
    fox::apgas::finish([&] {
      for (Place p : places) {
        fox::apgas::asyncAt(p, [] { throw std::runtime_error("boom at " + std::to_string(fox::apgas::here().id)); });
      }
    });
  } catch (const fox::apgas::MultipleExceptions& m) {
    size_t right = 0;
    for (auto& e : m.exceptions()) {
      try {
        std::rethrow_exception(e);
      } catch (const fox::apgas::RemoteException& r) {
        right += r.type() == "std::runtime_error" && std::string(r.what()) == "boom at " + std::to_string(r.place().id);
      } catch (const std::runtime_error& r) {
        right += std::string(r.what()) == "boom at 0";
      }
    }
    gathered = m.exceptions().size() == n && right == n;
    std::printf("apgas: finish gathered %zu exceptions: %s\n", m.exceptions().size(), m.what());
  }
  CHECK(gathered);
  std::printf("apgas: basic: PASS\n");
}

std::atomic<uint64_t> g_counter{0};

void Global() {
  auto places = fox::apgas::places();
  fox::apgas::GlobalRef<std::atomic<uint64_t>> ref(&g_counter);
  g_counter = 0;
  fox::apgas::finish([&] {
    for (Place p : places) {
      fox::apgas::asyncAt(
          p,
          [](fox::apgas::GlobalRef<std::atomic<uint64_t>> r) {
            fox::apgas::at(
                r.home(), [](fox::apgas::GlobalRef<std::atomic<uint64_t>> r2) { r2()->fetch_add(1); }, r);
          },
          ref);
    }
  });
  CHECK(g_counter.load() == places.size());
  bool refused = false;
  try {
    fox::apgas::at(
        places.back(), [](fox::apgas::GlobalRef<std::atomic<uint64_t>> r) { return r()->load(); }, ref);
  } catch (const fox::apgas::RemoteException& e) {
    refused = e.type() == "std::logic_error";
  } catch (const std::logic_error&) {
    refused = false;
  }
  CHECK(refused || places.back().id == 0);
  auto names = fox::apgas::PlaceLocal<std::string>::Make(
      places, [] { return "object of place " + std::to_string(fox::apgas::here().id); });
  for (Place p : places) {
    std::string got = fox::apgas::at(
        p, [](fox::apgas::PlaceLocal<std::string> h) { return *h(); }, names);
    CHECK(got == "object of place " + std::to_string(p.id));
  }
  names.Destroy(places);
  std::printf("apgas: global: %zu remote updates through a GlobalRef, %zu PlaceLocal objects: PASS\n", places.size(),
              places.size());
}

}  // namespace apgas_node
