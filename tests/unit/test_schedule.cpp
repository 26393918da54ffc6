// The learning-rate schedules against their formulas, written out here per update, and the large-batch
// scaling rules (--lr-scaling) with their one-line refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "base/error.h"
#include "workloads/optim/schedule.h"

namespace ts {
namespace {

TEST(Schedule, EveryKindFollowsItsFormula) {
  wl::Schedule s;
  s.lr = 0.1;
  s.minLr = 0.01;
  s.kind = wl::ScheduleKind::kConstant;
  EXPECT_DOUBLE_EQ(s.at(77), 0.1);
  s.kind = wl::ScheduleKind::kStep;
  s.stepSize = 10;
  s.gamma = 0.5;
  EXPECT_DOUBLE_EQ(s.at(9), 0.1);
  EXPECT_DOUBLE_EQ(s.at(25), 0.025);
  s.kind = wl::ScheduleKind::kCosine;
  s.warmup = 4;
  s.total = 104;
  EXPECT_DOUBLE_EQ(s.at(0), 0.025);  // lr / warmup
  EXPECT_DOUBLE_EQ(s.at(3), 0.1);
  EXPECT_NEAR(s.at(54), 0.01 + 0.09 * 0.5, 1e-15);  // half way: cos(pi/2)
  EXPECT_DOUBLE_EQ(s.at(104), 0.01);
  s.kind = wl::ScheduleKind::kLinear;
  EXPECT_NEAR(s.at(29), 0.01 + 0.09 * 0.75, 1e-15);
  // Cyclic, half cycle 10: min at 0, 20, 40; lr at 10, 30; linear between.
  s.kind = wl::ScheduleKind::kCyclic;
  for (int u : {0, 20, 40}) EXPECT_NEAR(s.at(u), 0.01, 1e-15) << u;
  for (int u : {10, 30}) EXPECT_NEAR(s.at(u), 0.1, 1e-15) << u;
  EXPECT_NEAR(s.at(5), 0.01 + 0.09 * 0.5, 1e-15);
  EXPECT_NEAR(s.at(33), 0.01 + 0.09 * 0.7, 1e-15);
  EXPECT_EQ(s.toJson()["kind"], "cyclic");
  EXPECT_EQ(s.toJson()["step_size"], 10);
}

TEST(Schedule, LargeBatchRulesScaleTheGivenRates) {
  wl::Schedule s;
  s.lr = 0.1;
  s.minLr = 0.01;
  s.scaling = wl::LrScaling::kLinear;
  s.baseBatch = 256;
  wl::validateSchedule(s);
  s.scaleFor(1024);
  EXPECT_DOUBLE_EQ(s.lr, 0.4);
  EXPECT_DOUBLE_EQ(s.minLr, 0.04);
  EXPECT_EQ(s.toJson()["scaling"]["rule"], "linear");
  EXPECT_DOUBLE_EQ(s.toJson()["scaling"]["given_lr"].get<double>(), 0.1);
  EXPECT_DOUBLE_EQ(s.toJson()["scaling"]["factor"].get<double>(), 4.0);
  wl::Schedule q;
  q.lr = 1e-3;
  q.scaling = wl::LrScaling::kSqrt;
  q.baseBatch = 32;
  q.scaleFor(128);
  EXPECT_DOUBLE_EQ(q.lr, 2e-3);
  wl::Schedule none;
  none.scaleFor(4096);
  EXPECT_DOUBLE_EQ(none.lr, 1e-3);
  EXPECT_FALSE(none.toJson().contains("scaling"));
}

std::string refusal(const wl::Schedule& s) {
  try {
    wl::validateSchedule(s);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(Schedule, ScalingWithoutItsBaseIsOneLine) {
  wl::Schedule s;
  s.scaling = wl::LrScaling::kLinear;
  EXPECT_EQ(refusal(s), "--lr-scaling linear needs --base-batch: the global batch the given --lr is for");
  s.scaling = wl::LrScaling::kNone;
  s.baseBatch = 64;
  EXPECT_EQ(refusal(s), "--base-batch is --lr-scaling's: give --lr-scaling linear or sqrt");
  wl::Schedule c;
  c.kind = wl::ScheduleKind::kCyclic;
  c.stepSize = 0;
  EXPECT_EQ(refusal(c), "--lr-step-size (the cyclic schedule's half cycle) must be >= 1");
}

}  // namespace
}  // namespace ts
