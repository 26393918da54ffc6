#pragma once
// The training loop of one rank: data (prefetched in a loader thread), forward, backward and the
// optimizer update, each timed as its own phase; gradient accumulation over micro-batches, clipping by
// global norm, the learning-rate schedule, checkpoints and resume. The parallel layout is inside it: the
// rank's place in the Mesh (dp, tp, pp), its gradient sync (ZeRO, ps-async) and its pipeline stage.
// `trainscope train` (bench/train/) drives it and writes the records (Trainer::config: their config).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/precision.h"
#include "kernels/trace.h"
#include "workloads/batch_staging.h"
#include "workloads/checkpoint/checkpoint.h"
#include "workloads/data/data_source.h"
#include "workloads/data/prefetcher.h"
#include "workloads/device_spec.h"
#include "workloads/memory_account.h"
#include "workloads/mixed_precision.h"
#include "workloads/models/model.h"
#include "workloads/optim/optimizer.h"
#include "workloads/optim/schedule.h"
#include "workloads/parallel/async_ps.h"
#include "workloads/parallel/gradient_sync.h"
#include "workloads/parallel/mesh.h"
#include "workloads/parallel/pipeline.h"
#include "workloads/parallel/sync_batchnorm.h"
#include "workloads/parallel/tensor_parallel.h"

namespace ts::wl {

struct TrainOptions {
  ModelKind model = ModelKind::kMlp;
  std::string preset = "tiny";
  std::vector<std::string> overrides;  // key=value model fields
  std::int64_t steps = 100;
  std::int64_t batch = 32;        // global batch per optimizer step (samples or sequences)
  std::int64_t microBatches = 1;  // gradient accumulation: the batch is cut into this many micro-batches
  DeviceSpec device;
  Precision precision = Precision::kFloat32;  // or bfloat16 / float16 mixed precision (emulated on the CPU); tf32 on CUDA
  double lossScale = 65536.0;                 // float16: the initial dynamic loss scale
  int lossScaleInterval = 2000;               // float16: good steps before the scale doubles
  OptimizerOptions optimizer;
  Schedule schedule;
  double clipNorm = 0;  // clip the global gradient norm to this (0: off)
  std::uint64_t seed = 1234;
  std::string data = "synthetic";
  std::int64_t syntheticSize = 1 << 16;
  std::string checkpointDir;
  std::int64_t checkpointEvery = 0;  // steps between checkpoints (0: only at the end when a directory is given)
  bool resume = false;
  bool checkpointAsync = false;   // snapshot to host memory, write in the background, commit at the next save or the end
  LayoutOptions layout;           // the parallel layout (resolved against the world by the caller)
  std::string memoryLimit = "0";  // per rank, as given ("6G"): what the device may hand out at once ("0": no limit)
  // Evaluation on the held-out split: every evalEvery steps (0: never) over evalBatches batches of
  // microBatchSize() samples per rank (0: the whole split once); the run stops early once the metric reaches
  // a target (accuracy at or above targetAccuracy, loss at or below targetLoss; 0: none).
  std::int64_t evalEvery = 0, evalBatches = 0;
  data::Augment augment = data::Augment::kNone;  // --augment: the training images' random crop and flip
  double dropout = 0;                            // --dropout: the drop probability of the models' dropout layers (0: none)
  double targetAccuracy = 0, targetLoss = 0;
  // The options as given, as the option table records them (bench/train/train_command.cpp): the first half of
  // Trainer::config, the record's and each checkpoint's.
  nlohmann::json given = nlohmann::json::object();
};

// Every check that reads no data and allocates nothing (flags, preset, overrides, optimizer, schedule; the model's
// size against the host's memory on the CPU; the data's spec and that each file it names is a readable regular
// file): UsageError.
void validateTrainOptions(const TrainOptions& options);
// --sync-bn auto, decided: on where it makes data parallel train as one process does (the cnn, dp > 1, the
// CPU); on and off stay. The record's layout says which it was.
SyncBatchNorm resolveSyncBatchNorm(const TrainOptions& options, int dp);

// One evaluation on the held-out split: every rank its shard of each batch, the figures the data-parallel
// group's (the same on every rank, so that all decide alike whether a target is reached).
struct EvalResult {
  std::int64_t step = 0;   // optimizer steps trained before it
  double loss = 0;         // mean cross-entropy per sample (classification) or per token (language model)
  double accuracy = 0;     // top-1, of samples or of next tokens
  double perplexity = 0;   // language model: exp(loss); 0 for a classifier
  std::int64_t items = 0;  // samples or tokens evaluated, all ranks
  double seconds = 0;      // this rank's wall time for it (kept out of every step time)
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
  StepComm comm;             // the step's collectives: in flight (communication) and waited for (exposed)
  double checkpointS = 0;    // writing a checkpoint after the step: not part of totalS (the step's time)
  // --sync ps-async: how many updates behind the oldest parameter shard this step used was (-1: not a
  // ps-async worker's step).
  int staleness = -1;
};

// What checkpointing cost the run: the training's stall per save, the writes (every rank's, per save the
// slowest rank's time) and this rank's read on a resume.
struct CheckpointStats {
  bool async = false;
  std::vector<double> stallS;   // per save: how long this rank's training stood still for it
  std::uint64_t bytes = 0;      // written, over every rank and save
  double writeS = 0;            // per save the slowest rank's write (sync included), summed
  std::uint64_t readBytes = 0;  // a resume: the files this rank read (mapped and hashed)
  double readS = 0;
  nlohmann::json toJson() const;
};

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
  std::int64_t evalBatchCount() const { return evalBatches_; }
  std::int64_t evalSampleCount() const { return evalSamples_; }  // each evaluation's: its batches x their global batch
  double epochsTrained() const { return source_->epochsAfter(nextStep_); }
  const data::DataInfo* evalDataInfo() const { return evalSource_ ? &evalSource_->info() : nullptr; }
  std::int64_t nextStep() const { return nextStep_; }
  std::int64_t firstStep() const { return firstStep_; }  // > 0 after a resume
  // Saves a checkpoint of the state after the last step (a no-op without a checkpoint directory); returns
  // the step directory committed (async: the previous save's, committed first; "" when none). Collective.
  std::string saveCheckpoint();
  // Async: waits for the save in the background and commits it (collective); "" when none is pending.
  std::string finishCheckpoint();
  // How the ranks agree on a checkpoint (the run's control plane); needed before a save by several ranks.
  void setCheckpointGroup(ckpt::SaveGroup group) { group_ = std::move(group); }
  const CheckpointStats& checkpointStats() const { return checkpointStats_; }

  Model& model() { return *model_; }
  Device& device() { return *device_; }
  const TrainOptions& options() const { return options_; }
  const data::DataInfo& dataInfo() const { return source_->info(); }
  // Samples per micro-batch on this rank: the global batch over data-parallel ranks and micro-batches.
  std::int64_t microBatchSize() const { return options_.batch / (options_.microBatches * dataParallel()); }
  // The data-parallel ranks that train (ps-async's dedicated servers do not), over which batches are split.
  int dataParallel() const { return mesh_->layout().workers(); }
  const Mesh& mesh() const { return *mesh_; }
  // This rank's memory: the steps' peaks by kind since setup, the setup's peak, and the layout's formula.
  MemoryAccount memoryAccount() const;
  // Elements of the parameters whose update (optimizer state, reduced gradients) this rank owns.
  std::size_t ownedParameterElements() { return sync_->ownedParameterElements(); }
  // --sync ps-async: what a worker sends per step (its gradient's shards); 0 otherwise.
  std::size_t asyncPsBytesPerStep() const { return asyncPs_ ? asyncPs_->bytesPerStep() : 0; }
  // Calls visit with each parameter this rank trains, its value current during the call (ZeRO-3 keeps only
  // shards between layers and gathers one layer at a time): call on every rank.
  void visitParameters(const std::function<void(Param&)>& visit) { sync_->visitParameters(visit); }
  // The parameters this rank trains: all, or its pipeline stage's.
  const std::vector<Param*>& trainedParams() const { return part_.params; }
  const Pipeline* pipeline() const { return pipeline_.get(); }
  // Matmul/conv FLOPs of one optimizer step over all ranks (3x the forward of every micro-batch).
  double flopsPerStep() const;
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
  StepResult trainStep();                                      // step(), without its --memory-limit line
  void build(double commTimeoutS);                             // data, model, layout, optimizer, resume, loader
  StepResult serveStep(StepResult& r, trace::Span& stepSpan);  // ps-async: a dedicated server's
  StepResult finishAsyncStep(StepResult& r, double loss, trace::Span& stepSpan);  // ps-async: a worker's, after its backward
  void resumeFrom(const std::string& stepDir, const ModelConfig& config);
  struct PendingSave;
  TrainOptions options_;
  std::unique_ptr<Mesh> ownMesh_;  // when none was given: a mesh of one
  const Mesh* mesh_;
  std::unique_ptr<Device> device_;  // before the model: its memory is the device's
  std::unique_ptr<data::DataSource> source_;
  std::unique_ptr<data::DataSource> evalSource_;  // --eval-every: the held-out split, batches of dp x micro-batch
  std::int64_t evalBatches_ = 0, evalSamples_ = 0;
  std::unique_ptr<Model> model_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<BatchStager> stager_;  // CUDA: the loader thread's uploads (before the loader, which calls it)
  std::unique_ptr<data::Prefetcher> loader_;
  std::unique_ptr<MasterWeights> masters_;      // bfloat16 / float16
  std::unique_ptr<LossScaler> scaler_;          // float16
  std::unique_ptr<Pipeline> pipeline_;          // pp > 1
  std::unique_ptr<TensorParallelGroup> tp_;     // tp > 1
  std::unique_ptr<SyncBatchNormGroup> syncBn_;  // --sync-bn on and dp > 1
  ModelPart part_;
  std::unique_ptr<GradientSync> sync_;  // after the model: it holds buckets in the model's arena
  AsyncPsSync* asyncPs_ = nullptr;      // sync_, under --sync ps-async
  std::int64_t nextStep_ = 0, firstStep_ = 0;
  bool stopped_ = false;
  std::size_t setupPeak_ = 0;
  ModelStateBytes formula_;
  ckpt::SaveGroup group_;
  std::unique_ptr<PendingSave> pending_;  // a save written (or being written) but not committed
  CheckpointStats checkpointStats_;
  std::vector<std::int64_t> lastIndices_;
  double lastMicroLoss_ = 0;
};

}  // namespace ts::wl
