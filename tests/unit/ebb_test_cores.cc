// Test shim for the platform's core index (see ebb_test_cores.h). Linked only
// into the ebb test and benchmark programs: the hosted platform (kernel/linux)
// will define fox::core::Current for real programs.
#include "ebb_test_cores.h"

#include <cstdint>  // fox/core.h uses uint64_t

#include "fox/core.h"

namespace {
thread_local int t_core = 0;
}  // namespace

int fox::core::Current() { return t_core; }

void fox::testing::SetCurrentCore(int core) { t_core = core; }
