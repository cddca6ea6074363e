// The closure table (serialization.h): id -> runner, filled before main by
// the static member of every Closure<F, A...> instantiation.
#include "fox/apgas/serialization.h"
#include "named_table.h"

namespace fox::apgas::detail {
namespace {
bool Same(const Runner& a, const Runner& b) { return a == b; }
}  // namespace

uint64_t RegisterClosure(const char* name, Runner run) {
  return NamedTable<Runner>::Get().Add("closures", name, run, &Same);
}

Runner FindClosure(uint64_t id) {
  const Runner* run = NamedTable<Runner>::Get().Find(id);
  return run == nullptr ? nullptr : *run;
}

std::vector<uint64_t> ClosureIds() { return NamedTable<Runner>::Get().Ids(); }

}  // namespace fox::apgas::detail
