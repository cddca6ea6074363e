// Platform-neutral helpers of the ebb/ test suite (see ebb_test_util.h).
#include "ebb_test_util.h"

#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

namespace fox::testing {

ebb::EbbId FreshStaticId(std::string_view base) {
  static std::mutex mu;
  static std::set<ebb::EbbId> used;
  static int counter = 0;
  std::lock_guard<std::mutex> lock(mu);
  if (used.size() >= ebb::kStaticIdCount / 2) std::abort();  // rerun with fewer repeats
  for (;;) {
    ebb::EbbId id = ebb::StaticId(std::string(base) + "#" + std::to_string(counter++));
    if (used.insert(id).second) return id;
  }
}

}  // namespace fox::testing
