#pragma once
// One training step of a rank written down instead of run (train --plan's schedule, issue #41): train_step.cpp's
// forwardBackward and update in the same order, each component's plan in place of its communication (the sync's
// SyncPlan, planPipelineStep, the layers' tensor-parallel sums).
#include <optional>
#include <string>

#include "workloads/parallel/pipeline.h"
#include "workloads/parallel/step_plan.h"
#include "workloads/trainer/trainer_options.h"

namespace ts::wl {

// Why the layout's steps are not a fixed list of ops to write down (nullopt: they are).
std::optional<std::string> unschedulableStep(const Mesh& mesh);
// The step of `mesh`'s rank training `part`, whose first layer is the model's layer `firstLayer`; `cut`: its
// pipeline stage (null without one). Where the steps differ, the window of steps after which they repeat (the
// sync's SyncPlan::windowSteps: model averaging's --average-every), its first step the run's first.
StepPlan planTrainStep(const TrainOptions& o, const Mesh& mesh, const ModelPart& part, std::size_t firstLayer,
                       const PipelineCut* cut);

}  // namespace ts::wl
