// apps/mcphoton's transport (apps/mcphoton/photon.h): its logarithm against
// the C library's, a batch's tallies the same bits every time and whatever
// order batches are summed in, the light conserved (reflected + absorbed +
// transmitted = launched, up to the roulette's unbiased noise), and the
// physics' direction: a thicker slab transmits less and absorbs more.
#include "../../apps/mcphoton/photon.h"

#include <gtest/gtest.h>

#include <cmath>

namespace {

using namespace fox::apps::photon;

TEST(Photon, LogIsWithinAFewUnitsOfTheLibrarys) {
  Random rng(1);
  for (int i = 0; i < 100000; ++i) {
    double x = rng.Open();
    EXPECT_NEAR(Log(x), std::log(x), 1e-15 * std::fabs(std::log(x)) + 4e-16) << x;
  }
  EXPECT_EQ(Log(1.0), 0.0);
  EXPECT_NEAR(Log(0x1.0p-53), -53 * 0.6931471805599453, 1e-13);
}

double Total(const Tally& t) { return Tally::Sum(t.reflected) + Tally::Sum(t.absorbed) + Tally::Sum(t.transmitted); }

TEST(Photon, BatchesAreReproducibleAndSumInAnyOrder) {
  Medium m;
  Tally a(m), b(m), again(m);
  Simulate(m, 2000, 11, &a);
  Simulate(m, 2000, 12, &b);
  Simulate(m, 2000, 11, &again);
  EXPECT_EQ(a.Bytes(), again.Bytes());
  EXPECT_NE(a.Bytes(), b.Bytes());
  Tally ab(m), ba(m);
  ab.Add(a);
  ab.Add(b);
  ba.Add(b);
  ba.Add(a);
  EXPECT_EQ(ab.Checksum(), ba.Checksum());
  Tally back(m);
  ASSERT_TRUE(back.FromBytes(ab.Bytes()));
  EXPECT_EQ(back.Bytes(), ab.Bytes());
  EXPECT_FALSE(back.FromBytes(ab.Bytes().substr(8)));
}

TEST(Photon, LightIsConserved) {
  Medium m;
  Tally t(m);
  Simulate(m, 20000, 3, &t);
  EXPECT_EQ(t.photons, 20000u);
  EXPECT_NEAR(Total(t) / 20000, 1.0, 0.01);
  EXPECT_GT(Tally::Sum(t.reflected), 0);
  EXPECT_GT(Tally::Sum(t.transmitted), 0);
}

TEST(Photon, AThickerSlabTransmitsLessAndAbsorbsMore) {
  Medium thin, thick;
  thick.thickness = 0.4;
  Tally a(thin), b(thick);
  Simulate(thin, 5000, 5, &a);
  Simulate(thick, 5000, 5, &b);
  EXPECT_LT(Tally::Sum(b.transmitted), Tally::Sum(a.transmitted) / 2);
  EXPECT_GT(Tally::Sum(b.absorbed), Tally::Sum(a.absorbed) * 1.5);
}

}  // namespace
