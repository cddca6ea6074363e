// The ebb/ GoogleTest suite (tests/unit/ebb_*_test.cc) on the fox runtime:
// a native node (vm.ebb_suite.*) or the hosted runtime (hosted.ebb_suite).
// main runs as core 0's first event; the tests spread over the other cores
// (ebb_test_runtime.cc). GoogleTest flags may follow, e.g.
// `-- --gtest_filter=Destroy.*` on a node's boot line.
#include <gtest/gtest.h>

#include <cstdio>

#include "ebb_test_runtime.h"
#include "ebb_test_util.h"
#include "fox/core.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int workers = fox::testing::WorkerCores();
  if (workers < 3) {
    std::printf("ebb_suite: needs at least 4 cores, this node has %d online\n", fox::core::Online());
    return 2;
  }
  std::printf("ebb_suite: core 0 runs the tests, cores 1..%d race in them (%d online)\n", workers, fox::core::Online());
  int status = RUN_ALL_TESTS();
  fox::testing::ReleaseCores();
  return status;
}
