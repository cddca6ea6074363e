#include "../../kernel/common/event/idle.h"

#include <gtest/gtest.h>

namespace fox::event::platform {
namespace {

constexpr uint64_t kMax = 1'000'000;

// Short sleeps (a longer poll would have caught them) double the window up
// to the most a core may poll; it never exceeds it.
TEST(PollWindow, GrowsAfterShortSleepsUpToTheMost) {
  PollWindow w;
  EXPECT_EQ(w.ns, PollWindow::kStartNs);
  uint64_t expected = PollWindow::kStartNs;
  for (int i = 0; i < 20; ++i) {
    w.Adapt(5'000, kMax);
    expected = std::min(expected * 2, kMax);
    EXPECT_EQ(w.ns, expected);
  }
  EXPECT_EQ(w.ns, kMax);
}

// Long sleeps (a core only timers wake) halve it, down to no poll at all;
// the next short sleep starts it again from kStartNs.
TEST(PollWindow, ShrinksToNothingAfterLongSleepsAndRestarts) {
  PollWindow w;
  for (int i = 0; i < 10; ++i) w.Adapt(1, kMax);
  ASSERT_EQ(w.ns, kMax);
  int halvings = 0;
  while (w.ns != 0) {
    uint64_t before = w.ns;
    w.Adapt(kMax, kMax);  // as long as the most: a poll would not have caught it
    EXPECT_TRUE(w.ns == before / 2 || w.ns == 0);
    ASSERT_LT(++halvings, 64);
  }
  EXPECT_EQ(halvings, 6);  // 1 ms -> 500, 250, 125, 62.5, 31.25 us -> none (under 20 us)
  w.Adapt(kMax * 10, kMax);
  EXPECT_EQ(w.ns, 0u);
  w.Adapt(1, kMax);
  EXPECT_EQ(w.ns, PollWindow::kStartNs);
}

// A most below the starting window caps it too.
TEST(PollWindow, SmallMostCapsTheStart) {
  PollWindow w;
  w.ns = 0;
  w.Adapt(1, 10'000);
  EXPECT_EQ(w.ns, 10'000u);
}

}  // namespace
}  // namespace fox::event::platform
