// What the fox-runtime runs of the ebb/ suite add to ebb_test_util.h.
#pragma once

namespace fox::testing {

// Lets the parked worker cores (ebb_test_runtime.cc) return to their event
// loops. Core 0, after the last test.
void ReleaseCores();

}  // namespace fox::testing
