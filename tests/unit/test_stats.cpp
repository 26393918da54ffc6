#include <gtest/gtest.h>

#include <cmath>

#include "bench/results/stats.h"

namespace ts {

// Reference values computed by hand (and by numpy: percentile(..., 95) with linear interpolation).
TEST(Stats, SummarizesAKnownSample) {
  const Stats s = summarize({5, 1, 4, 2, 3});
  EXPECT_EQ(s.n, 5u);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(s.p95, 4.8);
  EXPECT_DOUBLE_EQ(s.stdev, std::sqrt(2.5));
  EXPECT_DOUBLE_EQ(s.cv, std::sqrt(2.5) / 3);
}

TEST(Stats, EvenCountMedianInterpolates) {
  const Stats s = summarize({10, 20, 30, 40});
  EXPECT_DOUBLE_EQ(s.median, 25);
  EXPECT_DOUBLE_EQ(s.p95, 38.5);
}

TEST(Stats, DegenerateSamples) {
  EXPECT_EQ(summarize({}).n, 0u);
  const Stats one = summarize({7});
  EXPECT_DOUBLE_EQ(one.median, 7);
  EXPECT_DOUBLE_EQ(one.stdev, 0);
  EXPECT_DOUBLE_EQ(summarize({0, 0}).cv, 0);
}

TEST(Stats, JsonCarriesEveryField) {
  const auto j = toJson(summarize({1, 2}));
  for (const char* k : {"min", "median", "mean", "p95", "max", "stdev", "cv", "n"}) EXPECT_TRUE(j.contains(k)) << k;
}

}  // namespace ts
