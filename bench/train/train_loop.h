#pragma once
// The measured part of `trainscope train`: every rank trains its steps, timing each (the first
// --warmup-steps untimed), with the planted faults of TRAINSCOPE_FAULT, the progress line, a console row
// every few steps on process 0 and, with --trace, the trace files.
#include <exception>
#include <functional>
#include <optional>

#include "bench/failures/fault_injection.h"
#include "bench/train/mlperf_run_log.h"
#include "bench/train/train_options.h"
#include "bench/train/train_record.h"
#include "workloads/trainer.h"

namespace ts {

class Bootstrap;

struct TrainLoopResult {
  MeasuredSteps steps;
  // What stopped the loop (another rank gone, a timeout, a signal): rethrown once the steps trained are
  // recorded.
  std::exception_ptr failed;
};

// Called after every step trained, with whether it is timed (past the warm-up): process 0 streams it.
using StepDone = std::function<void(const wl::StepResult&, bool timed)>;

// Collective: every rank of the mesh calls it. `leader`: the process that prints. With --eval-every it
// evaluates on the held-out split (outside every step's time) and stops once a --target-* is reached;
// mllog (process 0's, with --mllog) logs run_start, the blocks of steps, every evaluation and run_stop.
TrainLoopResult runTrainLoop(wl::Trainer& trainer, const TrainRunOptions& o, const wl::Mesh& mesh, Bootstrap& boot,
                             const std::optional<Fault>& fault, bool leader, const StepDone& stepDone,
                             MlperfRunLog* mllog = nullptr);

}  // namespace ts
