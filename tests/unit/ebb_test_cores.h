// Threads as cores for the ebb/ host tests and benchmark: core::Current() is
// a thread_local index the program sets (ebb_test_cores.cc defines
// fox::core::Current).
#pragma once

namespace fox::testing {

// Makes core::Current() return `core` on the calling thread (default 0).
// Set it before the thread's first Ebb access.
void SetCurrentCore(int core);

}  // namespace fox::testing
