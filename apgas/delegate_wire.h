// Internal: the messages of delegate operations (delegate.h), made, read and
// applied without the runtime, so that they can be fuzzed alone (the table
// of call functions, delegate.h's RegisterDelegateFn, is here too).
//
// Requests, to kDelegateId at the data's home:
//   kBatch   asynchronous operations, answered as a whole by kAck
//   kCall    one operation, answered by kResult with its result
// Both: a 32-byte header, then `count` operations of 8 + arg_bytes bytes:
//   off size
//     0    8 token         the issuer's, repeated in the answer
//     8    8 region        the GlobalArray's id (global_memory.h)
//    16    8 function      kCall operations: the function's id; else 0
//    24    2 count         operations, >= 1 (kCall: 1)
//    26    1 op            DelegateOp
//    27    1 type          DelegateType (add: integer or floating point)
//    28    2 arg_bytes     bytes after each operation's index
//    30    2 result_bytes  kCall: the result's bytes; kBatch: 0
//   per operation: u64 the element's index in the home's block, then its
//   arguments (write, add, xor: the value; compare_exchange: expected and
//   desired; call: the function's arguments, packed)
// Answers, to kDelegateId at the issuer:
//   kAck     u64 token, u32 operations refused, u8 DelegateStatus of the
//            first refused, 3 bytes 0
//   kResult  u64 token, u8 DelegateStatus, 7 bytes 0, then (kOk) the result
// Integers are little-endian (the machines' order: both ends are x86-64).
#pragma once

#include <cstddef>
#include <cstdint>

#include "fox/apgas/delegate.h"

namespace fox::apgas::detail {

enum DelegateHandler : uint16_t { kDelegateBatch = 1, kDelegateCall = 2, kDelegateAck = 3, kDelegateResult = 4 };
inline constexpr size_t kDelegateHeaderBytes = 32;
inline constexpr size_t kDelegateAckBytes = 16;
inline constexpr size_t kDelegateResultHeaderBytes = 16;
inline constexpr uint32_t kMaxDelegateResultBytes = 1024;

enum class DelegateStatus : uint8_t {
  kOk = 0,
  kNoRegion,    // the array is not (or no longer) at this place
  kOutOfRange,  // an index past the home's block
  kBadOp,       // an operation, type or size that does not fit the element
  kNoFunction,  // a call to a function this program lacks, or of another shape
  kDead,        // (issuer only) the home died
};
const char* DelegateStatusName(DelegateStatus status);

struct DelegateHeader {
  uint64_t token = 0, region = 0, fn = 0;
  uint16_t count = 0;
  DelegateOp op = DelegateOp::kRead;
  DelegateType type = DelegateType::kBytes;
  uint16_t arg_bytes = 0, result_bytes = 0;
};
void StoreDelegateHeader(uint8_t* out, const DelegateHeader& h);

// A request read back: false (and `why`) unless its length is the header's
// plus count operations and the header is well formed (a known operation,
// count >= 1, result_bytes <= kMaxDelegateResultBytes).
bool ReadDelegateHeader(const uint8_t* data, size_t length, DelegateHeader* h, const char** why);

// A region's elements at its home.
struct RegionView {
  uint8_t* base = nullptr;
  uint64_t count = 0;
  uint32_t elem_bytes = 0;
};
// Applies the operations of a request `h` was read from to `region` (for a
// call, `fn` is FindDelegateFn(h.fn)), in order; returns how many were
// refused and, in `first`, why the first was (kOk: none). The operations'
// kind must fit the element (else all are refused); each index must be in
// the block. Results (h.result_bytes; a call's single operation) go to
// `result` (may be null when result_bytes is 0).
uint32_t ApplyDelegates(const DelegateHeader& h, const uint8_t* data, const RegionView& region, const DelegateFn* fn,
                        uint8_t* result, DelegateStatus* first);

}  // namespace fox::apgas::detail
