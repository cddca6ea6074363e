// Internal: a table of code filled before main by registrations from static
// initializers (the closure table, serialization.h; delegate functions,
// delegate.h): each entry's id is FNV-1a of its name (the compiler's
// spelling of a template instantiation), the same in every program built
// from the same sources. Two different entries of one id abort the program
// at start, naming them: a job could run the wrong code.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace fox::apgas::detail {

template <class V>
class NamedTable {
 public:
  // Constructed on first use: registrations run from other files' static
  // initializers, in no particular order.
  static NamedTable& Get() {
    static NamedTable* t = new NamedTable;
    return *t;
  }
  // `what` names the kind in the message; `same` tells whether two entries
  // are the same code (a template instantiated in several files).
  uint64_t Add(const char* what, const char* name, const V& v, bool (*same)(const V&, const V&)) {
    uint64_t id = Fnv1a(name);
    std::lock_guard<std::mutex> g(lock_);
    auto [it, fresh] = entries_.emplace(id, v);
    if (!fresh && !same(it->second, v)) {
      std::fprintf(stderr, "apgas: two %s share the id %#llx (%s): rename one\n", what, (unsigned long long)id, name);
      std::abort();
    }
    return id;
  }
  // Entry `id`, or nullptr; entries never move (a node-based map).
  const V* Find(uint64_t id) {
    std::lock_guard<std::mutex> g(lock_);
    auto it = entries_.find(id);
    return it == entries_.end() ? nullptr : &it->second;
  }
  std::vector<uint64_t> Ids() {
    std::vector<uint64_t> ids;
    {
      std::lock_guard<std::mutex> g(lock_);
      for (auto& [id, v] : entries_) ids.push_back(id);
    }
    std::sort(ids.begin(), ids.end());
    return ids;
  }

 private:
  static uint64_t Fnv1a(const char* s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s != '\0'; ++s) h = (h ^ uint8_t(*s)) * 0x100000001b3ull;
    return h;
  }

  std::mutex lock_;
  std::unordered_map<uint64_t, V> entries_;
};

}  // namespace fox::apgas::detail
