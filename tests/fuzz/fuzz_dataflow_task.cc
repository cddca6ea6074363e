// libFuzzer: dataflow tasks (fox/apgas/dataflow.h, apgas/dataflow_wire.cc)
// from untrusted bytes, as a worker reads the queue's items: Decode never
// reads past the input, and the bytes of a task it accepts are exactly
// Encode's of that task.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fox/apgas/dataflow.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  fox::apgas::dataflow::Task task;
  if (fox::apgas::dataflow::Decode(bytes, &task)) {
    if (task.inputs.size() > fox::apgas::dataflow::kMaxInputs) __builtin_trap();
    if (fox::apgas::dataflow::Encode(task) != bytes) __builtin_trap();
  }
  return 0;
}
