// HPCC RandomAccess's generator (apps/gups/hpcc_random.h): the jump ahead
// lands where stepping does.
#include "../../apps/gups/hpcc_random.h"

#include <gtest/gtest.h>

namespace {

using fox::apps::hpcc::Next;
using fox::apps::hpcc::Starts;

TEST(HpccRandom, StartsEqualsSteppingFromOne) {
  uint64_t ran = 1;
  for (int64_t n = 0; n <= 5000; ++n) {
    ASSERT_EQ(Starts(n), ran) << "n = " << n;
    ran = Next(ran);
  }
  for (int64_t n = 5001; n < 300'000; ++n) ran = Next(ran);
  EXPECT_EQ(Starts(300'000), ran);
}

TEST(HpccRandom, PeriodAndNegativeSteps) {
  EXPECT_EQ(Starts(int64_t(fox::apps::hpcc::kPeriod)), 1u);
  EXPECT_EQ(Starts(-1), Starts(int64_t(fox::apps::hpcc::kPeriod) - 1));
  EXPECT_EQ(Next(Starts(-1)), 1u);  // one step before the start comes back to it
}

}  // namespace
