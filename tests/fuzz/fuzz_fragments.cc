// libFuzzer: large-message reassembly (ebb/include/fox/ebb/fragments.h) fed
// fragments from a few nodes, some of them well formed (the fuzzer picks
// header fields), with node deaths. Checks: no crash, no sanitizer report,
// delivered messages no longer than the limit, bounded reassembly memory
// that returns to zero once every node is dead.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fox/ebb/fragments.h"
#include "fox/net/wire.h"

using namespace fox::ebb;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kMaxMessage = 64 << 10, kMaxPartial = 256 << 10;
  Reassembler r(
      kMaxMessage, kMaxPartial,
      [](uint32_t from, fox::EbbId, fox::HandlerId, std::vector<uint8_t> bytes) {
        if (from > 3 || bytes.size() > kMaxMessage) __builtin_trap();
      },
      [](uint32_t, const char* why) {
        if (why == nullptr) __builtin_trap();
      });
  std::vector<uint8_t> frag;
  size_t i = 0;
  while (i + 2 <= size) {
    uint8_t op = data[i++];
    uint32_t from = op & 3;
    if ((op >> 2) == 63) {  // a node dies
      r.DropFrom(from);
      continue;
    }
    size_t len = data[i++];
    if (op & 4) {  // a well-formed header from small fields, then `len` bytes
      if (i + 6 > size) break;
      frag.assign(kFragmentHeaderBytes, 0);
      EncodeFragmentHeader(frag.data(), data[i] & 7, fox::EbbId{9}, fox::HandlerId{1},
                           fox::net::wire::Load16(data + i + 1) * 16u, fox::net::wire::Load16(data + i + 3) * 16u);
      i += 5;
      size_t n = len > size - i ? size - i : len;
      frag.insert(frag.end(), data + i, data + i + n);
      i += n;
    } else {  // raw bytes
      size_t n = len > size - i ? size - i : len;
      frag.assign(data + i, data + i + n);
      i += n;
    }
    r.OnFragment(from, frag.data(), frag.size());
    if (r.partial_bytes() > kMaxPartial) __builtin_trap();
  }
  for (uint32_t n = 0; n < 4; ++n) r.DropFrom(n);
  if (r.partial_bytes() != 0 || r.partial_messages() != 0) __builtin_trap();
  return 0;
}
