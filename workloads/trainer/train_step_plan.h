#pragma once
// One training step of a rank written down instead of run (train --plan's schedule, issue #41): train_step.cpp's
// forwardBackward and update in the same order, each component's plan in place of its communication (the sync's
// SyncPlan, planPipelineStep, the layers' tensor-parallel sums).
#include <cstdint>
#include <optional>

#include "workloads/parallel/pipeline.h"
#include "workloads/parallel/step_plan.h"
#include "workloads/trainer/trainer_options.h"

namespace ts::wl {

// --sync ps-async (async_ps.h) shares no step between its ranks: a worker runs up to --staleness steps ahead of the
// updates it uses and each server serves the gradients as they arrive, so its ranks' steps are no list of ops that
// meet. What its steady state is predicted from instead (reports/predict/ps_async.py), beside each rank's own step
// of compute that planTrainStep writes (a worker's forwards and backwards, a server's update of its shard; no ops):
struct AsyncPsFacts {
  int workers = 0, servers = 0, staleness = 0;
  bool dedicated = false;           // --ps-servers: the servers are ranks of their own, which train nothing
  std::uint64_t shardBytes = 0;     // what a worker sends each server per step, and each version back (float32, padded)
  int shard = -1;                   // the shard this rank serves (-1: none)
  std::uint64_t shardElements = 0;  // of it, the parameters' elements (not padding): what its update steps
  bool worker = false;
};
// The facts of `mesh`'s rank under ps-async over more than one rank; nullopt for every other layout.
std::optional<AsyncPsFacts> asyncPsFactsOf(const Mesh& mesh, const ModelPart& part);
// The step of `mesh`'s rank training `part`, whose first layer is the model's layer `firstLayer`; `cut`: its
// pipeline stage (null without one). Where the steps differ, the window of steps after which they repeat (the
// sync's SyncPlan::windowSteps: model averaging's --average-every), its first step the run's first.
StepPlan planTrainStep(const TrainOptions& o, const Mesh& mesh, const ModelPart& part, std::size_t firstLayer,
                       const PipelineCut* cut);

}  // namespace ts::wl
