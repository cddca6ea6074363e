// A dataflow task as the queue carries it (dataflow.h's Encode and
// Decode): id (8 bytes), kind (4), the inputs' count (4), the argument's
// length (4), the inputs (8 each), the argument; little-endian. Apart from
// dataflow.cc for the fuzzer (tests/fuzz/fuzz_dataflow_task.cc).
#include <algorithm>

#include "fox/apgas/dataflow.h"
#include "fox/net/wire.h"

namespace fox::apgas::dataflow {
namespace {
constexpr size_t kHeaderBytes = 8 + 4 + 4 + 4;  // id, kind, inputs, arg's length
}  // namespace

std::string Encode(const Task& task) {
  std::string out(kHeaderBytes + 8 * task.inputs.size() + task.arg.size(), '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  net::wire::Store64(p, task.id);
  net::wire::Store32(p + 8, task.kind);
  net::wire::Store32(p + 12, uint32_t(task.inputs.size()));
  net::wire::Store32(p + 16, uint32_t(task.arg.size()));
  p += kHeaderBytes;
  for (uint64_t input : task.inputs) {
    net::wire::Store64(p, input);
    p += 8;
  }
  std::copy(task.arg.begin(), task.arg.end(), p);
  return out;
}

bool Decode(const std::string& bytes, Task* task) {
  if (bytes.size() < kHeaderBytes) return false;
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  uint64_t inputs = net::wire::Load32(p + 12), arg = net::wire::Load32(p + 16);
  if (inputs > kMaxInputs || bytes.size() != kHeaderBytes + 8 * inputs + arg) return false;
  task->id = net::wire::Load64(p);
  task->kind = net::wire::Load32(p + 8);
  task->inputs.clear();
  for (uint64_t i = 0; i < inputs; ++i) task->inputs.push_back(net::wire::Load64(p + kHeaderBytes + 8 * i));
  task->arg.assign(bytes, kHeaderBytes + 8 * inputs, arg);
  return true;
}

}  // namespace fox::apgas::dataflow
