#pragma once
// The `train` record (reports/schema/result-v1.schema.json, $defs/train): what was trained, what its steps
// measured, and what every rank's steps came to. The runner fills it on process 0, toJson writes it, and
// the console (bench/train/train_console.h) prints from it.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/precision.h"
#include "bench/train/moe_exchanges.h"
#include "bench/train/train_breakdown.h"
#include "workloads/models/model.h"
#include "workloads/parallel/layout.h"
#include "workloads/parallel/mesh.h"
#include "workloads/parallel/pipeline.h"
#include "workloads/trainer.h"

namespace ts {

// One optimizer step of the loss curve.
struct LossPoint {
  std::int64_t step = 0;
  double loss = 0, lr = 0, gradNorm = 0;
  bool skipped = false;  // float16: the gradients overflowed (no update, no gradient norm)
  double lossScale = 1;  // float16: the scale its backward used
  int staleness = -1;    // ps-async: updates behind the oldest shard the step used (-1: none)
};

// One evaluation on the held-out split, and where in the run it fell.
struct EvalPoint {
  wl::EvalResult result;
  double elapsedS = 0;  // since the training loop started, evaluations included (MLPerf's clock)
  double trainS = 0;    // the steps' own time up to it, evaluations excluded
};

// --target-accuracy / --target-loss: the metric and value, and the first evaluation that reached it.
enum class TargetMetric { kAccuracy, kLoss };
template <>
struct EnumNames<TargetMetric> {
  static constexpr std::pair<std::string_view, TargetMetric> kNames[] = {{"accuracy", TargetMetric::kAccuracy},
                                                                         {"loss", TargetMetric::kLoss}};
};
struct TargetRecord {
  TargetMetric metric = TargetMetric::kAccuracy;
  double value = 0;
  std::optional<EvalPoint> reached;
};

// What the training loop measured on this rank.
struct MeasuredSteps {
  std::vector<LossPoint> lossCurve;  // every step trained
  double initialLoss = NAN, finalLoss = NAN;
  double checkpointS = 0;
  RankSteps timed;                   // the steps after the warm-up
  std::optional<std::string> error;  // why the loop stopped before the last step
  std::vector<EvalPoint> evals;      // --eval-every
  std::optional<TargetRecord> target;
  wl::StalenessCounts staleness;    // ps-async: this rank's steps (a worker's)
  ExpertExchanges expertExchanges;  // --ep: the timed steps' mixtures' all-to-alls (this rank's)
};

struct PipelineRecord {
  std::vector<wl::StageRange> stages;  // layers [from, to) of each
  std::int64_t microBatches = 1;
  wl::PipelineSchedule schedule = wl::PipelineSchedule::k1F1B;
  double theoreticalBubble() const;  // (p - 1) / (m + p - 1)
};

struct TrainRecord {
  // ps-async: every worker's steps by staleness (gathered after training).
  std::optional<wl::StalenessCounts> staleness;
  std::size_t asyncPsBytesPerStep = 0;  // ps-async: a worker's gradient shards sent per step
  // What was trained.
  wl::ModelKind model = wl::ModelKind::kMlp;
  Precision precision = Precision::kFloat32;
  std::string preset, device;
  wl::DeviceKind backend = wl::DeviceKind::kCpu;
  wl::ItemKind item = wl::ItemKind::kSamples;  // what a step's items are
  int worldSize = 1;
  wl::LayoutOptions layout;
  std::vector<wl::MeshAxis> mesh;
  nlohmann::json config;            // the trainer's resolved configuration, as it writes it
  std::int64_t parameters = 0;      // the whole model's
  std::size_t ownedParameters = 0;  // what process 0 updates: its shard, slice or stage
  double flopsPerStep = 0;          // the model's (MFU's numerator): recomputation not counted
  // --recompute: the FLOPs of the forwards the backward runs again, per step over all ranks (flopsPerStep plus these
  // are the hardware FLOPs, Megatron's HFU); and the mode, for the memory section.
  double recomputeFlopsPerStep = 0;
  wl::Recompute recompute = wl::Recompute::kNone;
  std::int64_t itemsPerStep = 0, firstStep = 0, warmupSteps = 0;
  std::size_t peakMemoryBytes = 0;   // process 0's most in use at once, setup or steps
  std::size_t memoryLimitBytes = 0;  // --memory-limit (0: none)
  nlohmann::json memory;             // every rank's memory account (wl::MemoryAccount::toJson), in rank order
  bool float16 = false;              // loss scaling: each point's scale and skip, and the skipped steps
  std::optional<PipelineRecord> pipeline;
  // --eval-every: its cadence, batches per evaluation, and the held-out split read (name, origin, samples).
  std::int64_t evalEvery = 0, evalBatches = 0;
  nlohmann::json evalSplit;
  // What the steps measured.
  MeasuredSteps steps;  // process 0's
  std::optional<std::map<std::string, double>> parameterNorms;
  std::optional<nlohmann::json> checkpoint;  // with --checkpoint-dir: CheckpointStats (stall, write and read bandwidth)
  // Every rank's steps (a completed run); after a failure, process 0's step times only.
  TrainBreakdown ranks;
  double tflopsPerDevice = 0;
  nlohmann::json mfu;  // bench/train/train_mfu.h's block
  std::string label, suiteStep;
  // A mixture-of-experts model: its routing settings, and what each MoE layer process 0 ran counted over every training
  // micro-batch of the run (warmup included; recomputations and evaluations not): toJson's "moe".
  wl::MoeSettings moeSettings;
  std::vector<wl::MoeLayerStats> moe;

  bool completed() const { return !steps.error; }
  bool timed() const { return !ranks.stepSeconds.empty(); }
  // Over the timed steps (timed() only).
  double medianStepS() const;
  double throughputPerS() const { return static_cast<double>(itemsPerStep) / medianStepS(); }
  double tflops() const { return flopsPerStep / medianStepS() / 1e12; }
  std::int64_t skippedSteps() const;
};

nlohmann::json toJson(const TrainRecord& r);

// One step as the stream has it while the run trains (`train_progress`, $defs/train_progress): process 0
// streams one after every step, so a run that is killed, hangs or crashes keeps the steps it trained
// (only the step in flight is lost). `about` is the run as describeRun states it before the first step;
// the first progress record of a run carries it whole (`train`), and a reader makes from it and the
// steps the train record of a run that never wrote its own (reports/common/stream.py). The train record, when
// it comes, sums the steps up: progress records are in the stream only, not in the final document.
nlohmann::json progressJson(const wl::StepResult& step, bool timed, const TrainRecord& about, bool first);

}  // namespace ts
