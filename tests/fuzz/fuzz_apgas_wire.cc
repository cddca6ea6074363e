// libFuzzer: the APGAS runtime's message bodies (apgas/runtime.h, "Messages")
// from untrusted bytes, decoded as the runtime decodes them: the first byte
// picks the message, the rest is its body. A decode either throws (the
// runtime counts the message malformed) or yields values whose encoding
// decodes to the same encoding (maps sort and merge keys, so the bytes read
// need not come back); it never crashes, reads past the input or allocates
// more than the input could hold (InArchive checks container sizes).
#include <cstddef>
#include <cstdint>
#include <exception>
#include <tuple>
#include <utility>
#include <vector>

#include "runtime.h"

namespace {
using namespace fox::apgas::detail;
using fox::apgas::InArchive;
using fox::apgas::OutArchive;

// Decodes `values` from the bytes; on success checks that their encoding
// decodes to values that encode the same.
template <class... T>
void RoundTrip(const uint8_t* data, size_t size, T&... values) {
  std::vector<uint8_t> once, twice;
  try {
    InArchive in(data, size);
    in(values...);
    OutArchive out(once);
    out(values...);
  } catch (const std::exception&) {
    return;  // malformed: the runtime counts it and drops it
  }
  std::tuple<T...> again;
  std::apply(
      [&](auto&... copies) {
        InArchive in(once.data(), once.size());
        in(copies...);  // must not throw: it encoded them
        OutArchive out(twice);
        out(copies...);
      },
      again);
  if (once != twice) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  uint8_t which = data[0] % 9;
  ++data;
  --size;
  uint64_t seq = 0, id = 0;
  uint32_t dead = 0;
  uint8_t mode = 0;
  FinishKey f, a;
  switch (which) {
    case 0: {  // kReport
      Report report;
      RoundTrip(data, size, seq, f, report);
      break;
    }
    case 1: {  // kFlushed
      std::vector<Unreported> counts;
      std::vector<Row> rows;
      RoundTrip(data, size, seq, dead, counts, rows);
      break;
    }
    case 2: {  // kAdoptions
      std::vector<std::pair<FinishKey, FinishKey>> pairs;
      RoundTrip(data, size, seq, dead, pairs);
      break;
    }
    case 3: {  // kAdopteeDone
      std::vector<ExceptionInfo> errors;
      RoundTrip(data, size, seq, a, f, errors);
      break;
    }
    case 4: {  // kJoin's request
      std::vector<uint64_t> closures;
      RoundTrip(data, size, mode, closures);
      break;
    }
    case 5: {  // kJoin's late reply
      std::vector<uint32_t> places, dead_places, members;
      RoundTrip(data, size, places, dead_places, members);
      break;
    }
    case 6: {  // kDone
      std::vector<ExceptionInfo> errors;
      RoundTrip(data, size, id, errors);
      break;
    }
    case 7: {  // kPlaces
      std::vector<uint32_t> places;
      RoundTrip(data, size, places);
      break;
    }
    default: {  // an activity's header (modes place0, optimistic)
      Chain chain;
      RoundTrip(data, size, f, chain);
      break;
    }
  }
  return 0;
}
