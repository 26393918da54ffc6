#pragma once
// One point of `trainscope scale` (kind "scaling"): its rank count and batch, what its train record said
// of it, and, when it completed, its throughput, speedup and efficiency against the smallest point and
// where its step went. The runner fills it; toJson writes the schema's `scaling` record and
// scale_table.h the console row.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/precision.h"
#include "bench/scale/scale_choices.h"
#include "workloads/device_spec.h"
#include "workloads/models/model.h"

namespace ts {

// What the point's train record says of the run, repeated so a study reads without its train records. Each is null
// where the train record did not state it.
struct ScalingTrainFacts {
  std::optional<wl::ModelKind> model;
  // Text, as the train record writes it: a preset is a name within its model kind (models/presets.cpp; "tiny" is one of
  // each kind), so no one enum holds them.
  std::optional<std::string> preset;
  std::optional<wl::DeviceKind> backend;
  std::optional<Precision> precision;
  std::string layout;  // the parallel layout's name; "single" without one
};

// Where a step went, in microseconds: per part, the median over the point's ranks.
struct ScalingBreakdown {
  double compute = 0, data = 0, sync = 0, idle = 0, communication = 0, exposedCommunication = 0;
};

// A point's time to its --target-accuracy / --target-loss (from its train record's target block).
struct ScalingTarget {
  bool reached = false;
  std::int64_t steps = 0;  // steps to the target (reached only)
  double seconds = 0;      // MLPerf's clock: the training loop's start to the evaluation at the target
};

// The figures of a point that completed.
struct ScalingFigures {
  int baselineRanks = 0;  // the smallest point that completed: speedup and efficiency are against it
  double stepTimeUs = 0, throughputPerS = 0, speedup = 0, efficiency = 0;
  double stepTimeMinUs = 0, stepTimeP95Us = 0;  // the spread of the point's step times (the report's error bars)
  std::optional<wl::ItemKind> item;
  ScalingBreakdown breakdown;
  // Each only where the train record had its block (communication, stragglers, pipeline); overlap and
  // the bubble may be null there.
  std::optional<std::optional<double>> overlap, pipelineBubble;
  std::optional<std::vector<int>> lateRanks;
  std::optional<ScalingTarget> target;  // where the study trains to a target
};

struct ScalingRecord {
  ScaleMode mode = ScaleMode::kWeak;
  LauncherKind launcher = LauncherKind::kMpirun;
  int ranks = 0;
  std::int64_t globalBatch = 0;
  std::string series;                      // the mode and the train flags: the points of one study
  std::string label, step, trace;          // "" = absent
  std::optional<ScalingTrainFacts> train;  // when the point wrote a train record
  std::optional<ScalingFigures> figures;   // a completed point
  std::string error;                       // a failed point: why
};

nlohmann::json toJson(const ScalingRecord& r);

}  // namespace ts
