#pragma once
// The training loop of one rank: data (prefetched in a loader thread), forward, backward and the optimizer update,
// each timed as its own phase; gradient accumulation over micro-batches, clipping by global norm, the learning-rate
// schedule, evaluations, checkpoints and resume. Trainer owns the pieces and composes them (workloads/trainer/): the
// options and their checks, the training data, the model on the mesh (its part, groups, gradient sync, optimizer),
// the evaluation, the checkpoint hand-off, ps-async's steps; the step itself is train_step.cpp. The caller places the
// rank (the Mesh of the resolved layout) and drives it: `trainscope train` (bench/train/), which writes the records
// (Trainer::config: their config, and each checkpoint's).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/trace.h"
#include "workloads/checkpoint/checkpoint.h"
#include "workloads/device.h"
#include "workloads/memory_account.h"
#include "workloads/models/model.h"
#include "workloads/parallel/comm_tracker.h"
#include "workloads/parallel/expert_parallel.h"
#include "workloads/parallel/mesh.h"
#include "workloads/trainer/checkpoint_handoff.h"
#include "workloads/trainer/evaluation.h"
#include "workloads/trainer/model_on_mesh.h"
#include "workloads/trainer/trainer_options.h"
#include "workloads/trainer/training_data.h"

namespace ts::wl {

// What this rank itself computes and updates in a training step (Layer::rankForwardFlops: its tensor-parallel slices'
// share of its pipeline stage's layers, over its micro-batches; none on ps-async's dedicated servers): the FLOPs and
// elements its phases' times are per, where flopsPerStep and the parameter count are the model's. The backward is
// twice the forward (flopsPerStep's convention).
struct RankWork {
  double forwardFlops = 0;
  double recomputeFlops = 0;   // the forwards its backward runs again: --recompute's, and a pipeline stage's (pipeline.h)
  double updatedElements = 0;  // the parameter elements its optimizer updates (its slices', its shards': the sync's)
};

struct StepResult {
  std::int64_t step = 0;  // 0-based index of the optimizer step
  double loss = 0, lr = 0, gradNorm = 0;
  bool skipped = false;  // float16: the gradients overflowed, the update was skipped and the scale halved
  double lossScale = 1;  // the scale this step's backward used
  // Phase times in seconds: data = waiting for the loader; the others host wall time from one phase's
  // start to the next (on CUDA the device is synchronised at each boundary, so they include device time).
  // sync = after the backward and around the update: waiting for gradients, reducing the norm, sending
  // parameters back (data parallel; 0 on one rank).
  double dataS = 0, forwardS = 0, backwardS = 0, syncS = 0, optimizerS = 0, totalS = 0;
  double pipelineWaitS = 0;  // pipeline stages: blocked on receiving activations or gradients (bubble + transfer)
  // Of forwardS and backwardS, the time blocked in communication calls made inside them (blockedInCommunicationS):
  // a phase less it is its compute alone, what a prediction's compute rates are taken from.
  double forwardCommS = 0, backwardCommS = 0;
  StepComm comm;  // the step's collectives: in flight (communication) and waited for (exposed)
  // Expert parallel: what each mixture exchanged this step (this rank's), by exchange name (layers/moe.h).
  std::map<std::string, ExpertExchangeStats> expertExchanges;
  double checkpointS = 0;  // writing a checkpoint after the step: not part of totalS (the step's time)
  // --sync ps-async: how many updates behind the oldest parameter shard this step used was (-1: not a
  // ps-async worker's step).
  int staleness = -1;
};

// Samples per micro-batch on each training rank of `layout` (resolved): the global batch over its data-parallel ranks
// that train and the micro-batches; UsageError, one line, when it does not split.
std::int64_t microBatchSizeOf(const TrainOptions& o, const LayoutOptions& layout);

class Trainer {
 public:
  // Builds data, model and optimizer, checking every option (UsageError, one line). With resume and a
  // checkpoint in checkpointDir, continues from it. `mesh` (null: one process) places this rank in the
  // layout; commTimeoutS bounds every wait for the other ranks (0: none).
  explicit Trainer(const TrainOptions& options, const Mesh* mesh = nullptr, double commTimeoutS = 0);
  ~Trainer();
  // Trains one optimizer step (the one after the last), saving a checkpoint when one is due.
  StepResult step();
  bool done() const { return stopped_ || nextStep_ >= options_.steps; }
  // Evaluates the model as it is now on the held-out split (--eval-every's batches); collective.
  EvalResult evaluate();
  // Whether an evaluation reached --target-accuracy / --target-loss (false without one).
  bool reachedTarget(const EvalResult& e) const;
  // Ends training after the step just trained (done() from now on), with a checkpoint where the run keeps
  // them (collective): the run reached its target early.
  void stop();
  std::int64_t evalBatchCount() const { return eval_ ? eval_->batches() : 0; }
  std::int64_t evalSampleCount() const {
    return eval_ ? eval_->samples() : 0;
  }  // each evaluation's: its batches x their global batch
  double epochsTrained() const { return data_.source->epochsAfter(nextStep_); }
  const data::DataInfo* evalDataInfo() const { return eval_ ? &eval_->info() : nullptr; }
  std::int64_t nextStep() const { return nextStep_; }
  std::int64_t firstStep() const { return firstStep_; }  // > 0 after a resume
  // Saves a checkpoint of the state after the last step (a no-op without a checkpoint directory); returns
  // the step directory committed (async: the previous save's, committed first; "" when none). Collective.
  std::string saveCheckpoint();
  // Async: waits for the save in the background and commits it (collective); "" when none is pending.
  std::string finishCheckpoint();
  // How the ranks agree on a checkpoint (the run's control plane); needed before a save by several ranks.
  void setCheckpointGroup(ckpt::SaveGroup group) { checkpoints_.setGroup(std::move(group)); }
  const CheckpointStats& checkpointStats() const { return checkpoints_.stats(); }

  Model& model() { return *parts_.model; }
  Device& device() { return *device_; }
  const TrainOptions& options() const { return options_; }
  const data::DataInfo& dataInfo() const { return data_.source->info(); }
  // Samples per micro-batch on this rank: the global batch over data-parallel ranks and micro-batches.
  std::int64_t microBatchSize() const { return microBatchSizeOf(options_, mesh_->layout()); }
  // The data-parallel ranks that train (ps-async's dedicated servers do not), over which batches are split.
  int dataParallel() const { return mesh_->layout().workers(); }
  const Mesh& mesh() const { return *mesh_; }
  // This rank's memory: the steps' peaks by kind since setup, the setup's peak, and the layout's formula.
  MemoryAccount memoryAccount() const;
  // Elements of the parameters whose update (optimizer state, reduced gradients) this rank owns.
  std::size_t ownedParameterElements() { return parts_.sync->ownedParameterElements(); }
  // --sync ps-async: what a worker sends per step (its gradient's shards); 0 otherwise.
  std::size_t asyncPsBytesPerStep() const { return parts_.asyncPs ? parts_.asyncPs->bytesPerStep() : 0; }
  // Calls visit with each parameter this rank trains, its value current during the call (ZeRO-3 keeps only
  // shards between layers and gathers one layer at a time): call on every rank.
  void visitParameters(const std::function<void(Param&)>& visit) { parts_.sync->visitParameters(visit); }
  // The parameters this rank trains: all, or its pipeline stage's.
  const std::vector<Param*>& trainedParams() const { return parts_.part.params; }
  const Pipeline* pipeline() const { return parts_.pipeline.get(); }
  // Matmul/conv FLOPs of one optimizer step over all ranks (3x the forward of every micro-batch).
  double flopsPerStep() const;
  // The forwards --recompute runs again in the backward, over all ranks: not in flopsPerStep (the model's FLOPs, MFU's).
  double recomputeFlopsPerStep() const;
  RankWork rankWorkPerStep();
  std::int64_t itemsPerStep() const;
  // What the run resolved its options to: the model's whole configuration, the micro-batch, the data, the optimizer's and
  // the schedule's settings (after --lr-scaling), the memory limit in bytes, the layout.
  nlohmann::json resolved() const;
  // The run's config: the options as given (TrainOptions::given) and under "resolved" what they resolved to. The record's
  // config and each checkpoint's index.json hold it (--resume reads the model, the optimizer and the layout back).
  nlohmann::json config() const;
  // The dataset indices of the last micro-batch trained (model().logits() are its logits) and its loss.
  const std::vector<std::int64_t>& lastSampleIndices() const { return lastIndices_; }
  double lastMicroBatchLoss() const { return lastMicroLoss_; }

 private:
  void build(double commTimeoutS);  // data, model, layout, optimizer, resume, loader
  // The step (workloads/trainer/train_step.cpp).
  StepResult trainStep();  // step(), without its --memory-limit line
  double forwardBackward(StepResult& r, data::Batch batch, StepContext& ctx, float scale);  // the loss summed
  void update(StepResult& r, trace::Span& syncSpan);  // the gradient norm, clipping, the optimizer
  void collectStepComm(StepResult& r);
  void checkpointIfDue(StepResult& r);
  // --sync ps-async (workloads/trainer/ps_async_steps.cpp).
  StepResult serveStep(StepResult& r, trace::Span& stepSpan);                     // a dedicated server's
  StepResult finishAsyncStep(StepResult& r, double loss, trace::Span& stepSpan);  // a worker's, after its backward

  TrainOptions options_;
  std::unique_ptr<Mesh> ownMesh_;  // when none was given: a mesh of one
  const Mesh* mesh_;
  std::unique_ptr<Device> device_;  // before the model: its memory is the device's
  TrainingData data_;
  std::unique_ptr<Evaluation> eval_;  // --eval-every
  ModelOnMesh parts_;
  CheckpointHandOff checkpoints_;  // after the model: a save in the background reads its snapshot, not the model
  std::int64_t nextStep_ = 0, firstStep_ = 0;
  bool stopped_ = false;
  std::size_t setupPeak_ = 0;
  std::vector<std::int64_t> lastIndices_;  // the last micro-batch's
  double lastMicroLoss_ = 0;
};

}  // namespace ts::wl
