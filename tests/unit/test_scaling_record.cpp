// The scaling record of a point that ran and of one that failed, as the schema and the report read it,
// and its console row.
#include <gtest/gtest.h>

#include "bench/scale/scale_table.h"
#include "bench/scale/scaling_record.h"

namespace ts {
namespace {

ScalingRecord point(int ranks) {
  ScalingRecord r;
  r.mode = ScaleMode::kWeak;
  r.launcher = LauncherKind::kMpirun;
  r.ranks = ranks;
  r.globalBatch = 8 * ranks;
  r.series = "weak --model mlp";
  return r;
}

}  // namespace

TEST(ScalingRecord, AFailedPointHasItsErrorAndNoFigures) {
  ScalingRecord r = point(3);
  r.error = "exit 2: --batch 4 does not split";
  EXPECT_EQ(toJson(r).dump(),
            R"({"completed":false,"error":"exit 2: --batch 4 does not split","global_batch":24,"kind":"scaling",)"
            R"("launcher":"mpirun","mode":"weak","ranks":3,"series":"weak --model mlp"})");
  EXPECT_EQ(scaleTableRow(r), "       3       24  failed: exit 2: --batch 4 does not split\n");
  r.train = ScalingTrainFacts{wl::ModelKind::kMlp, std::nullopt, wl::DeviceKind::kCpu, Precision::kFloat32,
                              "single"};  // it wrote a train record, incomplete
  r.label = "study";
  r.trace = "/tmp/t/ranks3";
  const nlohmann::json j = toJson(r);
  EXPECT_EQ(j["model"], "mlp");  // by name, as the train record writes it
  EXPECT_EQ(j["backend"], "cpu");
  EXPECT_EQ(j["precision"], "float32");
  EXPECT_TRUE(j["preset"].is_null());
  EXPECT_EQ(j["layout"], "single");
  EXPECT_EQ(j["label"], "study");
  EXPECT_EQ(j["trace"], "/tmp/t/ranks3");
  EXPECT_FALSE(j.contains("step") || j.contains("speedup"));
}

TEST(ScalingRecord, ACompletedPointStatesTheTrainBlocksItHad) {
  ScalingRecord r = point(2);
  r.train = ScalingTrainFacts{wl::ModelKind::kMlp, "tiny", wl::DeviceKind::kCpu, Precision::kBFloat16, "dp=2"};
  ScalingFigures f;
  f.baselineRanks = 1;
  f.stepTimeUs = 1500;
  f.throughputPerS = 4000;
  f.item = wl::ItemKind::kTokens;
  f.speedup = 1.6;
  f.efficiency = 0.8;
  f.breakdown = {1000, 10, 20, 30, 400, 250};
  f.overlap = std::optional<double>();  // a communication block without a figure: null
  f.lateRanks = std::vector<int>{1};
  r.figures = f;
  r.step = "scale";
  const nlohmann::json j = toJson(r);
  EXPECT_EQ(j["completed"], true);
  EXPECT_EQ(j["precision"], "bfloat16");
  EXPECT_EQ(j["item"], "tokens");
  EXPECT_FALSE(j.contains("error"));
  EXPECT_EQ(j["baseline_ranks"].dump(), "1");
  EXPECT_EQ(j["breakdown_us"].dump(),
            R"({"communication":400.0,"compute":1000.0,"data":10.0,"exposed_communication":250.0,"idle":30.0,"sync":20.0})");
  EXPECT_TRUE(j.contains("overlap") && j["overlap"].is_null());
  EXPECT_EQ(j["late_ranks"].dump(), "[1]");
  EXPECT_FALSE(j.contains("pipeline_bubble"));  // no pipeline block
  EXPECT_EQ(j["step"], "scale");
  EXPECT_EQ(scaleTableRow(r),
            "       2       16        1.500         4000.0      1.60      80.0%        1.000        0.250  dp=2\n");
}

}  // namespace ts
