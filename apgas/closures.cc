// The closure table (serialization.h): id -> runner, filled before main by
// the static member of every Closure<F, A...> instantiation.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include "fox/apgas/serialization.h"

namespace fox::apgas::detail {
namespace {

struct Table {
  std::mutex lock;
  std::unordered_map<uint64_t, Runner> runners;
};

// Constructed on first use: registrations run from other files' static
// initializers, in no particular order.
Table& TheTable() {
  static Table* t = new Table;
  return *t;
}

uint64_t Fnv1a(const char* s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s != '\0'; ++s) h = (h ^ uint8_t(*s)) * 0x100000001b3ull;
  return h;
}

}  // namespace

uint64_t RegisterClosure(const char* name, Runner run) {
  uint64_t id = Fnv1a(name);
  Table& t = TheTable();
  std::lock_guard<std::mutex> g(t.lock);
  auto [it, fresh] = t.runners.emplace(id, run);
  if (!fresh && it->second != run) {
    // Two closure types with one id: the job could run the wrong code.
    std::fprintf(stderr, "apgas: two closures share the id %#llx (%s): rename one\n", (unsigned long long)id, name);
    std::abort();
  }
  return id;
}

Runner FindClosure(uint64_t id) {
  Table& t = TheTable();
  std::lock_guard<std::mutex> g(t.lock);
  auto it = t.runners.find(id);
  return it == t.runners.end() ? nullptr : it->second;
}

std::vector<uint64_t> ClosureIds() {
  Table& t = TheTable();
  std::vector<uint64_t> ids;
  {
    std::lock_guard<std::mutex> g(t.lock);
    for (auto& [id, run] : t.runners) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace fox::apgas::detail
