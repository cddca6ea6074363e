// libFuzzer: delegate requests (apgas/delegate_wire.h) from untrusted bytes,
// read and applied as a home applies them, to a region of 16 words between
// guard bytes, with one call function registered (an add returning the
// value before). A request whose header reads back is stored again to the
// same bytes; its operations are applied or refused (a count, and the first
// reason: kOk exactly when none was), never touching a byte outside the
// elements they name. Nothing crashes or reads past the input.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "delegate_wire.h"

namespace {
using namespace fox::apgas::detail;

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

void AddBefore(void* element, const uint8_t* args, uint8_t* result) {
  uint64_t x, d;
  std::memcpy(&x, element, 8);
  std::memcpy(&d, args, 8);
  std::memcpy(result, &x, 8);
  x += d;
  std::memcpy(element, &x, 8);
}
const uint64_t kFn = RegisterDelegateFn("fuzz add-before", DelegateFn{&AddBefore, 8, 8, 8});

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  DelegateHeader h;
  const char* why = nullptr;
  if (!ReadDelegateHeader(data, size, &h, &why)) {
    Check(why != nullptr);
    return 0;
  }
  uint8_t again[kDelegateHeaderBytes];
  StoreDelegateHeader(again, h);
  Check(std::memcmp(again, data, kDelegateHeaderBytes) == 0);
  // The region: elements of 4 or 8 bytes (the first byte of the token picks).
  const uint32_t elem = (h.token & 1) != 0 ? 4 : 8;
  uint8_t memory[64 + 16 * 8 + 64];
  std::memset(memory, 0xA5, sizeof memory);
  RegionView region{memory + 64, 16, elem};
  std::memset(region.base, 0, 16 * elem);
  const DelegateFn* fn = h.op == DelegateOp::kCall ? FindDelegateFn(h.fn == 0 ? kFn : h.fn) : nullptr;
  static uint8_t result[kMaxDelegateResultBytes];
  DelegateStatus first;
  uint32_t refused = ApplyDelegates(h, data, region, fn, result, &first);
  Check(refused <= h.count && (refused == 0) == (first == DelegateStatus::kOk));
  for (size_t b = 0; b < 64; ++b) Check(memory[b] == 0xA5);
  for (size_t b = 64 + 16 * elem; b < sizeof memory; ++b) Check(memory[b] == 0xA5);
  return 0;
}
