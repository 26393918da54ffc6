// The straggler analysis of a train record on launch times worked out by hand.
#include <gtest/gtest.h>

#include "bench/train/arrival_skew.h"

namespace ts {
namespace {

TEST(ArrivalSkew, NamesTheRankThatIsConsistentlyLateInItsGroups) {
  // Group dp0 = ranks 0,1; dp1 = ranks 2,3. Rank 3 launches each of dp1's collectives 5 ms after rank 2.
  const std::vector<RankLaunches> ranks = {{0, {{"dp0", {0.000, 0.010, 0.020}}}},
                                           {1, {{"dp0", {0.0001, 0.0101, 0.0201}}}},
                                           {2, {{"dp1", {0.000, 0.010, 0.020}}}},
                                           {3, {{"dp1", {0.005, 0.015, 0.025}}}}};
  const nlohmann::json j = arrivalSkew(ranks, 1.0);
  EXPECT_EQ(j["late_ranks"], nlohmann::json::array({3}));
  ASSERT_EQ(j["ranks"].size(), 4u);
  EXPECT_EQ(j["ranks"][3]["collectives"], 3);
  EXPECT_NEAR(j["ranks"][3]["median_skew_us"].get<double>(), 5000.0, 1e-6);
  EXPECT_NEAR(j["ranks"][1]["max_skew_us"].get<double>(), 100.0, 1e-6);
  EXPECT_EQ(j["ranks"][0]["median_skew_us"], 0.0);
  EXPECT_FALSE(j["ranks"][1]["late"].get<bool>());
}

TEST(ArrivalSkew, ARankHeldUpOnceAStepIsLateByTheHoldUpHoweverManyCollectivesFollowIt) {
  // Two steps of two collectives each (the gradients', then the loss's mean at once after it): rank 1 is 40 ms late
  // at each step's first and in step with rank 0 at its second. Per collective its median would be 20 ms; per step
  // (its largest skew in the step) 40 ms.
  RankLaunches zero{0, {{"dp0", {0.000, 0.050, 0.100, 0.150}}}};
  RankLaunches one{1, {{"dp0", {0.040, 0.050, 0.140, 0.150}}}};
  zero.steps["dp0"] = one.steps["dp0"] = {0, 0, 1, 1};
  const nlohmann::json j = arrivalSkew({zero, one}, 1.0);
  EXPECT_EQ(j["late_ranks"], nlohmann::json::array({1}));
  EXPECT_NEAR(j["ranks"][1]["median_skew_us"].get<double>(), 40000.0, 1e-6);
  EXPECT_EQ(j["ranks"][1]["collectives"], 4);
  // Without the steps each collective is a step of its own: the diluted median.
  zero.steps.clear();
  one.steps.clear();
  EXPECT_NEAR(arrivalSkew({zero, one}, 1.0)["ranks"][1]["median_skew_us"].get<double>(), 20000.0, 1e-6);
}

TEST(ArrivalSkew, BelowTheThresholdOrLikeEveryoneElseIsNotLate) {
  // Everyone is 2 ms apart from someone: no one stands out at 3x the others.
  const std::vector<RankLaunches> spread = {{0, {{"dp0", {0.000, 0.002}}}}, {1, {{"dp0", {0.002, 0.000}}}}};
  EXPECT_TRUE(arrivalSkew(spread, 1.0)["late_ranks"].empty());
  // 0.5 ms late every time, under a 1 ms threshold.
  const std::vector<RankLaunches> small = {
      {0, {{"dp0", {0.0, 0.1}}}}, {1, {{"dp0", {0.0005, 0.1005}}}}, {2, {{"dp0", {0.0, 0.1}}}}};
  EXPECT_TRUE(arrivalSkew(small, 1.0)["late_ranks"].empty());
  EXPECT_EQ(arrivalSkew(small, 0.1)["late_ranks"], nlohmann::json::array({1}));
  // A group of one (tp=1 in every group) has nothing to compare with.
  const std::vector<RankLaunches> alone = {{0, {{"tp0", {0.0}}}}, {1, {{"tp1", {5.0}}}}};
  const nlohmann::json j = arrivalSkew(alone, 1.0);
  EXPECT_TRUE(j["late_ranks"].empty());
  EXPECT_EQ(j["ranks"][1]["collectives"], 0);
}

}  // namespace
}  // namespace ts
