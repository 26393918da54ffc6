// The train record as toJson writes it from the typed TrainRecord: the fields of a completed parallel run,
// of a run that stopped part-way, and of one that timed no step; each rank's place named by the mesh's axes.
#include <gtest/gtest.h>

#include <iterator>
#include <map>
#include <set>
#include <string>

#include "base/error.h"
#include "base/json_text.h"
#include "bench/scale/train_point.h"
#include "bench/train/train_record.h"
#include "comm/collectives/collective.h"

namespace ts {
namespace {

std::set<std::string> keys(const nlohmann::json& j) {
  std::set<std::string> out;
  for (const auto& [k, v] : j.items()) out.insert(k);
  return out;
}

wl::StepResult step(std::int64_t i, double seconds, bool skipped = false) {
  wl::StepResult r;
  r.step = i;
  r.loss = 3.0 - 0.1 * static_cast<double>(i);
  r.lr = 0.01;
  r.gradNorm = 1.5;
  r.skipped = skipped;
  r.lossScale = 1024;
  r.totalS = seconds;
  r.forwardS = seconds / 4;
  r.backwardS = seconds / 2;
  r.comm.communicationS = seconds / 5;
  r.comm.exposedS = seconds / 20;
  return r;
}

// Three steps of a dp=2 tp=2 pp=2 run in float16 (the second skipped), the last two timed.
TrainRecord parallelRecord() {
  wl::LayoutOptions l;
  l.tp = 2;
  l.pp = 2;
  TrainRecord r;
  r.model = wl::ModelKind::kTransformer;
  r.preset = "tiny";
  r.worldSize = 8;
  r.layout = wl::resolveLayout(l, 8);
  r.mesh = wl::meshAxesOf(r.layout, 0);
  r.itemsPerStep = 64;
  r.flopsPerStep = 2e12;
  r.float16 = true;
  r.pipeline = PipelineRecord{{{0, 1}, {1, 4}}, 4, wl::PipelineSchedule::k1F1B};
  for (int i = 0; i < 3; ++i) {
    const wl::StepResult s = step(i, 0.1 * (i + 1), i == 1);
    r.steps.lossCurve.push_back({s.step, s.loss, s.lr, s.gradNorm, s.skipped, s.lossScale});
    if (i > 0) r.steps.timed.add(s);
  }
  r.steps.initialLoss = 3.0;
  r.steps.finalLoss = 2.8;
  r.ranks.stepSeconds = {0.2, 0.4};
  r.ranks.measuredBubble = 0.25;
  RankRow row;
  row.rank = 5;
  row.coordinates = {0, 1, 1};  // dp, tp, pp: rank = 1 x 1 + 0 x 2 + 1 x 4
  row.step = 0.3;
  row.compute = 0.2;
  row.data = 0.01;
  row.sync = 0.02;
  row.communication = 0.05;
  row.exposed = 0.01;
  r.ranks.ranks = {row};
  r.ranks.collectives = {
      {wl::GroupKind::kTp, 2, collectives::all_reduce(), 4096, {0.001, 0.003}, {0.0005, 0.002}, 2.0, 2.0, 4.0}};
  r.ranks.stragglers = ArrivalSkew{1.0, {}, {}};
  r.mfu = {{"vs_measured", 0.5}};
  return r;
}

TEST(TrainRecord, ACompletedParallelRunWritesEveryFieldItHas) {
  const nlohmann::json j = toJson(parallelRecord());
  EXPECT_EQ(keys(j), (std::set<std::string>{"kind",
                                            "model",
                                            "preset",
                                            "backend",
                                            "device",
                                            "precision",
                                            "world_size",
                                            "layout",
                                            "mesh",
                                            "config",
                                            "config_version",
                                            "parameters",
                                            "owned_parameters",
                                            "flops_per_step",
                                            "recompute_flops_per_step",
                                            "items_per_step",
                                            "item",
                                            "first_step",
                                            "steps_done",
                                            "warmup_steps",
                                            "timed_steps",
                                            "completed",
                                            "peak_memory_bytes",
                                            "memory",
                                            "checkpoint_time_s",
                                            "loss",
                                            "loss_curve",
                                            "pipeline",
                                            "skipped_steps",
                                            "step_time_us",
                                            "step_samples_us",
                                            "phases_us",
                                            "communication",
                                            "ranks",
                                            "collectives",
                                            "stragglers",
                                            "throughput_per_s",
                                            "tflops",
                                            "tflops_per_device",
                                            "mfu"}));
  EXPECT_EQ(j["kind"], "train");
  EXPECT_EQ(j["completed"], true);
  EXPECT_EQ(j["steps_done"], 3);
  EXPECT_EQ(j["timed_steps"], 2);
  EXPECT_EQ(j["skipped_steps"], 1);
  EXPECT_TRUE(j["loss_curve"][1]["grad_norm"].is_null());  // the skipped step has no gradient norm
  EXPECT_EQ(j["loss_curve"][1]["skipped"], true);
  EXPECT_EQ(j["loss_curve"][0]["loss_scale"], 1024.0);
  // Every axis of the mesh in kMeshAxes' order: dp, tp and pp in Megatron's rank order, any other of one rank.
  ASSERT_EQ(j["mesh"].size(), std::size(wl::kMeshAxes));
  const std::map<std::string, nlohmann::json> laid = {{"dp", {{"name", "dp"}, {"size", 2}, {"stride", 2}}},
                                                      {"tp", {{"name", "tp"}, {"size", 2}, {"stride", 1}}},
                                                      {"pp", {{"name", "pp"}, {"size", 2}, {"stride", 4}}}};
  for (std::size_t a = 0; a < std::size(wl::kMeshAxes); ++a) {
    const std::string name(wl::kMeshAxes[a].name);
    EXPECT_EQ(j["mesh"][a]["name"], name);
    if (laid.count(name))
      EXPECT_EQ(j["mesh"][a], laid.at(name));
    else
      EXPECT_EQ(j["mesh"][a]["size"], 1) << name;
  }
  EXPECT_EQ(j["layout"]["name"], "dp=2 tp=2 pp=2 1f1b");
  EXPECT_DOUBLE_EQ(j["pipeline"]["theoretical_bubble"].get<double>(), 1.0 / 5);
  EXPECT_EQ(j["pipeline"]["measured_bubble"], 0.25);
  EXPECT_EQ(j["pipeline"]["layers"], nlohmann::json::parse("[[0,1],[1,4]]"));
  const nlohmann::json& rank = j["ranks"][0];
  EXPECT_EQ(rank["rank"], 5);
  EXPECT_EQ(rank["dp_rank"], 0);
  EXPECT_EQ(rank["tp_rank"], 1);
  EXPECT_EQ(rank["pp_rank"], 1);
  EXPECT_NEAR(rank["idle_us"].get<double>(), 0.07e6, 1e-6);
  EXPECT_NEAR(rank["overlap"].get<double>(), 0.8, 1e-12);
  const nlohmann::json& c = j["collectives"][0];
  EXPECT_EQ(c["group"], "tp");
  EXPECT_EQ(c["count"], 2);
  EXPECT_NEAR(c["time_us"]["median"].get<double>(), 2000, 1e-9);
  EXPECT_DOUBLE_EQ(j["step_time_us"]["median"].get<double>(), 0.3e6);
  EXPECT_DOUBLE_EQ(j["throughput_per_s"].get<double>(), 64 / 0.3);
  EXPECT_DOUBLE_EQ(j["tflops"].get<double>(), 2e12 / 0.3 / 1e12);
  EXPECT_NEAR(j["communication"]["overlap"].get<double>(), 0.75, 1e-12);
  EXPECT_EQ(j["phases_us"]["forward"]["n"], 2);
}

// `scale` reads a point's figures from its train record by the keys toJson writes: each figure it reads is the
// one the record was written from (a key renamed on either side fails here).
TEST(TrainRecord, ScaleReadsAPointsFiguresBackFromIt) {
  TrainRecord r = parallelRecord();
  r.backend = wl::DeviceKind::kCuda;
  r.precision = Precision::kFloat16;
  r.item = wl::ItemKind::kTokens;
  wl::EvalResult at;
  at.step = 7;
  r.steps.target = TargetRecord{TargetMetric::kLoss, 2.5, EvalPoint{at, 12.5, 10}};
  const nlohmann::json j = toJson(r);
  ASSERT_TRUE(completedPoint(j));
  const ScalingTrainFacts facts = trainFactsOf(j);
  EXPECT_EQ(facts.model, wl::ModelKind::kTransformer);
  EXPECT_EQ(facts.preset, "tiny");
  EXPECT_EQ(facts.backend, wl::DeviceKind::kCuda);
  EXPECT_EQ(facts.precision, Precision::kFloat16);
  EXPECT_EQ(facts.layout, r.layout.name());
  const ScalingFigures f = figuresOf(j, 8, {4, r.throughputPerS() / 2});
  EXPECT_DOUBLE_EQ(f.throughputPerS, r.throughputPerS());
  EXPECT_DOUBLE_EQ(f.speedup, 2);
  EXPECT_DOUBLE_EQ(f.efficiency, 1);
  EXPECT_DOUBLE_EQ(f.stepTimeUs, 0.3e6);  // the slowest rank's step times, 0.2 and 0.4 s
  EXPECT_DOUBLE_EQ(f.stepTimeMinUs, 0.2e6);
  EXPECT_GT(f.stepTimeP95Us, f.stepTimeUs);
  EXPECT_EQ(f.item, wl::ItemKind::kTokens);
  const RankRow& row = r.ranks.ranks.at(0);
  EXPECT_DOUBLE_EQ(f.breakdown.compute, row.compute * 1e6);
  EXPECT_DOUBLE_EQ(f.breakdown.data, row.data * 1e6);
  EXPECT_DOUBLE_EQ(f.breakdown.sync, row.sync * 1e6);
  EXPECT_NEAR(f.breakdown.idle, row.idle() * 1e6, 1e-6);
  EXPECT_DOUBLE_EQ(f.breakdown.communication, row.communication * 1e6);
  EXPECT_DOUBLE_EQ(f.breakdown.exposedCommunication, row.exposed * 1e6);
  ASSERT_TRUE(f.overlap && *f.overlap);
  EXPECT_NEAR(**f.overlap, 0.75, 1e-12);
  EXPECT_EQ(f.lateRanks, std::vector<int>{});
  ASSERT_TRUE(f.pipelineBubble && *f.pipelineBubble);
  EXPECT_EQ(**f.pipelineBubble, 0.25);
  ASSERT_TRUE(f.target);
  EXPECT_TRUE(f.target->reached);
  EXPECT_EQ(f.target->steps, 7);
  EXPECT_EQ(f.target->seconds, 12.5);
}

// A fact the point's train record does not state is null in the scaling record; a name this build has no value for
// (another build's record) is one line naming the choices, not a fact dropped.
TEST(TrainRecord, ScaleTellsAnUnstatedFactFromAnUnknownOne) {
  nlohmann::json j = toJson(parallelRecord());
  j.erase("precision");
  EXPECT_FALSE(trainFactsOf(j).precision);
  j["model"] = "rnn";
  try {
    trainFactsOf(j);
    ADD_FAILURE() << "an unknown model was taken";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "the point's train record: model 'rnn' is not mlp, cnn or transformer");
  }
}

TEST(TrainRecord, ARunThatStoppedKeepsItsOwnStepsAndNoRankFigures) {
  TrainRecord r = parallelRecord();
  r.steps.error = "all_reduce on rank 0 waited for its peers";
  r.ranks = TrainBreakdown{};
  r.ranks.stepSeconds = r.steps.timed.total;
  const nlohmann::json j = toJson(r);
  EXPECT_EQ(j["completed"], false);
  EXPECT_EQ(j["error"], "all_reduce on rank 0 waited for its peers");
  for (const char* gathered : {"communication", "ranks", "collectives", "stragglers"})
    EXPECT_FALSE(j.contains(gathered)) << gathered;
  EXPECT_EQ(j["phases_us"]["data"]["n"], 2);
  EXPECT_TRUE(j["pipeline"]["measured_bubble"].is_null());
  EXPECT_EQ(j["timed_steps"], 2);
}

TEST(TrainRecord, NoTimedStepNoStepFigures) {
  TrainRecord r = parallelRecord();
  r.float16 = false;
  r.pipeline.reset();
  r.ranks = TrainBreakdown{};
  r.label = "baseline";
  r.suiteStep = "train-small";
  const nlohmann::json j = toJson(r);
  for (const char* timed : {"step_time_us", "step_samples_us", "phases_us", "throughput_per_s", "tflops", "tflops_per_device",
                            "mfu", "ranks", "skipped_steps", "pipeline"})
    EXPECT_FALSE(j.contains(timed)) << timed;
  EXPECT_FALSE(j["loss_curve"][0].contains("loss_scale"));
  EXPECT_EQ(j["label"], "baseline");
  EXPECT_EQ(j["step"], "train-small");
}

// The steps as the stream has them while the run trains: each its own figures, the first the run's
// description (which a reader turns into the train record of a run that never wrote one).
TEST(TrainRecord, ProgressCarriesEachStepAndTheFirstCarriesTheRun) {
  TrainRecord about = parallelRecord();
  about.steps = MeasuredSteps{};
  about.steps.error = "stopped before its train record";
  about.ranks = TrainBreakdown{};
  about.label = "study";
  const wl::StepResult s = step(4, 0.25, true);
  const nlohmann::json first = progressJson(s, true, about, true);
  EXPECT_EQ(keys(first), (std::set<std::string>{"kind", "train_step", "loss", "lr", "grad_norm", "timed", "step_us", "phases_us",
                                                "loss_scale", "skipped", "train", "label"}));
  EXPECT_EQ(first["kind"], "train_progress");
  EXPECT_EQ(first["train_step"], 4);
  EXPECT_TRUE(first["grad_norm"].is_null());  // skipped: no gradient norm
  EXPECT_DOUBLE_EQ(first["step_us"].get<double>(), 0.25e6);
  EXPECT_DOUBLE_EQ(first["phases_us"]["backward"].get<double>(), 0.125e6);
  EXPECT_EQ(jsonText(first["train"]), jsonText(toJson(about)));  // as written (the NaN losses of no step as null)
  EXPECT_EQ(first["train"]["completed"], false);
  EXPECT_EQ(first["train"]["steps_done"], 0);
  about.float16 = false;
  const nlohmann::json next = progressJson(step(5, 0.2), false, about, false);
  EXPECT_FALSE(next.contains("train") || next.contains("loss_scale") || next.contains("skipped"));
  EXPECT_EQ(next["timed"], false);
  EXPECT_EQ(next["grad_norm"], 1.5);
}

}  // namespace
}  // namespace ts
