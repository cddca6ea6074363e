// Helpers for the ebb/ host tests: racing threads as cores, and static ids
// private to a test.
#pragma once

#include <functional>
#include <string_view>

#include "ebb_test_cores.h"
#include "fox/ebb/ebb_id.h"

namespace fox::testing {

// Runs fn(core) on `count` new threads acting as cores first_core,
// first_core + 1, ..., started together through a barrier so that they
// really race. An exception escaping fn is reported as a test failure. Each
// thread enters quiescence (fox::ebb::EnterQuiescence) when fn is done.
// Returns when all have finished.
void RunOnCores(int first_core, int count, const std::function<void(int core)>& fn);

// A static id for a test Ebb: StaticId(base + "#n") for the first n whose id
// no earlier call in this process returned, so tests can be repeated
// (destroyed static ids stay dead) and never collide with each other.
ebb::EbbId FreshStaticId(std::string_view base);

}  // namespace fox::testing
