// Threads as cores for the ebb/ host tests: core::Current() is a thread_local
// index the test sets (ebb_test_cores.cc defines fox::core::Current).
#pragma once

#include <functional>
#include <string_view>

#include "fox/ebb/ebb_id.h"

namespace fox::testing {

// Makes core::Current() return `core` on the calling thread (default 0).
// Set it before the thread's first Ebb access.
void SetCurrentCore(int core);

// Runs fn(core) on `count` new threads acting as cores first_core,
// first_core + 1, ..., started together through a barrier so that they
// really race. Each thread enters quiescence (fox::ebb::EnterQuiescence)
// when fn returns or throws. Returns when all have finished.
void RunOnCores(int first_core, int count, const std::function<void(int core)>& fn);

// A static id for a test Ebb: StaticId(base + "#n") for the first n whose id
// no earlier call in this process returned, so tests can be repeated
// (destroyed static ids stay dead) and never collide with each other.
ebb::EbbId FreshStaticId(std::string_view base);

}  // namespace fox::testing
