#pragma once
// `trainscope train <flags> --plan N`: what each rank of the layout resolved for N ranks would hold and compute, without
// training and without a communicator. One process places every rank by the trainer's own code (model_on_mesh.h:
// its mesh by shape, its pipeline stage from the same cut, its tensor-parallel slice, the layout's model-state
// formula) and builds each distinct (tensor-parallel slice, pipeline stage) deferred once, to count its activation
// buffers on the device's account; replicas share it. The first slice of issue #41's plan (docs/architecture.md,
// "Prediction"): the communication ops per layer come next.
#include <string>
#include <vector>

#include "bench/train/train_options.h"

namespace ts {

// The most ranks a plan places: its table and record have one row per rank.
inline constexpr std::int64_t kMaxPlanRanks = std::int64_t{1} << 16;

// Prints the plan's table and, with --json, writes one `train_plan` record per rank. UsageError, one line, under
// mpirun (or any launch of more than one process), or when the layout does not resolve for o.plan ranks.
int runTrainPlan(const TrainRunOptions& o, const std::vector<std::string>& argv);

}  // namespace ts
