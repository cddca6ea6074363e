// Delegate messages (delegate_wire.h): the header, operations applied to a
// region's bytes, and the table of call functions (RegisterDelegateFn).
#include "delegate_wire.h"

#include <cstring>

#include "named_table.h"

namespace fox::apgas::detail {
namespace {

template <class T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <class T>
void Store(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

// element op= arg for one width and kind; the value before in `before`.
template <class T>
void Arith(DelegateOp op, uint8_t* element, const uint8_t* arg, uint8_t* before) {
  T old = Load<T>(element), v = Load<T>(arg), now = old;
  if (op == DelegateOp::kAdd) {
    now = T(old + v);
  } else if constexpr (!std::is_floating_point_v<T>) {
    if (op == DelegateOp::kXor) {
      now = old ^ v;
    } else if (op == DelegateOp::kCas) {
      if (old == v) now = Load<T>(arg + sizeof(T));
    }
  }
  Store<T>(element, now);
  std::memcpy(before, &old, sizeof(T));
}

bool Width(uint32_t bytes) { return bytes == 4 || bytes == 8; }

bool SameFn(const DelegateFn& a, const DelegateFn& b) { return a.run == b.run; }

}  // namespace

uint64_t RegisterDelegateFn(const char* name, DelegateFn fn) {
  return NamedTable<DelegateFn>::Get().Add("delegate functions", name, fn, &SameFn);
}

const DelegateFn* FindDelegateFn(uint64_t id) { return NamedTable<DelegateFn>::Get().Find(id); }

const char* DelegateStatusName(DelegateStatus status) {
  switch (status) {
    case DelegateStatus::kOk: return "ok";
    case DelegateStatus::kNoRegion: return "no such array at the home (destroyed?)";
    case DelegateStatus::kOutOfRange: return "index out of the home's block";
    case DelegateStatus::kBadOp: return "operation does not fit the element";
    case DelegateStatus::kNoFunction: return "function unknown at the home (other sources?)";
    case DelegateStatus::kDead: return "the home died";
  }
  return "unknown status";
}

void StoreDelegateHeader(uint8_t* out, const DelegateHeader& h) {
  Store<uint64_t>(out, h.token);
  Store<uint64_t>(out + 8, h.region);
  Store<uint64_t>(out + 16, h.fn);
  Store<uint16_t>(out + 24, h.count);
  out[26] = uint8_t(h.op);
  out[27] = uint8_t(h.type);
  Store<uint16_t>(out + 28, h.arg_bytes);
  Store<uint16_t>(out + 30, h.result_bytes);
}

bool ReadDelegateHeader(const uint8_t* data, size_t length, DelegateHeader* h, const char** why) {
  if (length < kDelegateHeaderBytes) {
    *why = "shorter than a header";
    return false;
  }
  h->token = Load<uint64_t>(data);
  h->region = Load<uint64_t>(data + 8);
  h->fn = Load<uint64_t>(data + 16);
  h->count = Load<uint16_t>(data + 24);
  uint8_t op = data[26], type = data[27];
  h->arg_bytes = Load<uint16_t>(data + 28);
  h->result_bytes = Load<uint16_t>(data + 30);
  if (op < uint8_t(DelegateOp::kRead) || op > uint8_t(DelegateOp::kCall)) {
    *why = "unknown operation";
    return false;
  }
  if (type > uint8_t(DelegateType::kFloat)) {
    *why = "unknown type";
    return false;
  }
  h->op = DelegateOp(op);
  h->type = DelegateType(type);
  if (h->count == 0) {
    *why = "no operations";
    return false;
  }
  if (h->result_bytes > kMaxDelegateResultBytes) {
    *why = "result too long";
    return false;
  }
  if (length != kDelegateHeaderBytes + size_t(h->count) * (8 + size_t(h->arg_bytes))) {
    *why = "length does not match the header's count";
    return false;
  }
  return true;
}

namespace {

// Whether operations of `h`'s kind fit elements of `elem` bytes (and `fn`).
DelegateStatus CheckShape(const DelegateHeader& h, uint32_t elem, const DelegateFn* fn) {
  const bool returns = h.result_bytes != 0;
  if (returns && h.op != DelegateOp::kCall && h.result_bytes != elem) return DelegateStatus::kBadOp;
  switch (h.op) {
    case DelegateOp::kRead: return h.arg_bytes == 0 && returns ? DelegateStatus::kOk : DelegateStatus::kBadOp;
    case DelegateOp::kWrite: return h.arg_bytes == elem && !returns ? DelegateStatus::kOk : DelegateStatus::kBadOp;
    case DelegateOp::kAdd:
    case DelegateOp::kXor:
    case DelegateOp::kCas: {
      uint32_t want = h.op == DelegateOp::kCas ? 2 * elem : elem;
      bool typed = h.type == DelegateType::kInteger || (h.type == DelegateType::kFloat && h.op == DelegateOp::kAdd);
      return Width(elem) && h.arg_bytes == want && typed ? DelegateStatus::kOk : DelegateStatus::kBadOp;
    }
    case DelegateOp::kCall:
      return fn != nullptr && fn->elem_bytes == elem && fn->arg_bytes == h.arg_bytes &&
                     fn->result_bytes == h.result_bytes
                 ? DelegateStatus::kOk
                 : DelegateStatus::kNoFunction;
  }
  return DelegateStatus::kBadOp;
}

// One operation whose shape was checked, on `element`.
void ApplyOne(const DelegateHeader& h, uint8_t* element, uint32_t elem, const uint8_t* args, const DelegateFn* fn,
              uint8_t* result) {
  uint8_t before[8];
  switch (h.op) {
    case DelegateOp::kRead: std::memcpy(result, element, elem); return;
    case DelegateOp::kWrite: std::memcpy(element, args, elem); return;
    case DelegateOp::kAdd:
    case DelegateOp::kXor:
    case DelegateOp::kCas:
      if (h.type == DelegateType::kFloat) {
        elem == 4 ? Arith<float>(h.op, element, args, before) : Arith<double>(h.op, element, args, before);
      } else {
        elem == 4 ? Arith<uint32_t>(h.op, element, args, before) : Arith<uint64_t>(h.op, element, args, before);
      }
      if (h.result_bytes != 0) std::memcpy(result, before, elem);
      return;
    case DelegateOp::kCall: fn->run(element, args, result); return;
  }
}

}  // namespace

uint32_t ApplyDelegates(const DelegateHeader& h, const uint8_t* data, const RegionView& region, const DelegateFn* fn,
                        uint8_t* result, DelegateStatus* first) {
  const uint32_t elem = region.elem_bytes;
  *first = CheckShape(h, elem, fn);
  if (*first != DelegateStatus::kOk) return h.count;
  const size_t stride = 8 + size_t(h.arg_bytes);
  const uint8_t* record = data + kDelegateHeaderBytes;
  uint32_t refused = 0;
  // GUPS's and histograms' case, without the general path's dispatch.
  const bool word = elem == 8 && h.type == DelegateType::kInteger && h.result_bytes == 0 &&
                    (h.op == DelegateOp::kXor || h.op == DelegateOp::kAdd);
  for (size_t i = 0; i < h.count; ++i, record += stride) {
    uint64_t index = Load<uint64_t>(record);
    if (index >= region.count) {
      if (refused++ == 0) *first = DelegateStatus::kOutOfRange;
      continue;
    }
    uint8_t* element = region.base + index * elem;
    if (word) {
      uint64_t v = Load<uint64_t>(element), arg = Load<uint64_t>(record + 8);
      Store<uint64_t>(element, h.op == DelegateOp::kXor ? v ^ arg : v + arg);
    } else {
      ApplyOne(h, element, elem, record + 8, fn, result);
    }
  }
  return refused;
}

}  // namespace fox::apgas::detail
