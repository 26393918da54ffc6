#include "workloads/trainer.h"

#include <fmt/format.h>

#include "base/error.h"
#include "base/units.h"
#include "kernels/cpu/convolution.h"
#include "workloads/parallel/average_sync.h"

namespace ts::wl {

std::int64_t microBatchSizeOf(const TrainOptions& o, const LayoutOptions& layout) {
  if (o.batch % (o.microBatches * layout.workers()))
    throw UsageError(fmt::format("--batch {} does not split into {} data-parallel rank(s) x {} micro-batch(es)", o.batch,
                                 layout.workers(), o.microBatches));
  return o.batch / (o.microBatches * layout.workers());
}

Trainer::Trainer(const TrainOptions& options, const Mesh* mesh, double commTimeoutS)
    : options_(options), mesh_(mesh), checkpoints_(options.checkpointDir, options.checkpointAsync) {
  const TrainOptions& o = options_;
  validateTrainOptions(o);
  if (!mesh_) {
    ownMesh_ = std::make_unique<Mesh>(resolveLayout(o.layout, 1), nullptr);
    mesh_ = ownMesh_.get();
  }
  options_.layout = mesh_->layout();
  options_.layout.syncBn = resolveSyncBatchNorm(o, options_.layout.dataShards());
  const LayoutOptions& layout = options_.layout;
  microBatchSizeOf(o, layout);  // the batch splits, before anything is opened
  options_.schedule.total = o.steps;
  options_.schedule.scaleFor(o.batch);  // --lr-scaling: the rates for this global batch
  device_ = Device::open(o.device);     // first: a missing GPU is reported before any data is read
  device_->setMatmulPrecision(o.precision);
  device_->setMemoryLimit(parseBytes(o.memoryLimit, "--memory-limit"));
  try {
    build(commTimeoutS);
  } catch (const MemoryLimitExceeded& e) {
    throw UsageError(
        fmt::format("--memory-limit {} per rank: building the model for layout {} needed {} more for {} with {} in "
                    "use: {}",
                    formatBytes(e.limit), layout.name(), formatBytes(e.bytes), nameOf(e.kind), formatBytes(e.inUse),
                    saveMemoryAdvice(layout, e.kind)));
  }
  // The record's peaks are the steps'; setup's (the layout's share materialised, the buffers) is its own figure.
  setupPeak_ = device_->memory().totalPeak;
  device_->resetPeaks();
}

void Trainer::build(double commTimeoutS) {
  const TrainOptions& o = options_;
  ModelConfig config = modelConfigOf(o);
  const data::DataOptions d = trainingDataOptions(o, *mesh_, config);
  data_.source = std::make_unique<data::DataSource>(data::makeDataSource(d));
  if (o.evalEvery > 0) eval_ = std::make_unique<Evaluation>(d, o, microBatchSize(), o.layout.dataShards());
  completeModelConfig(config, o, mesh_->layout(), data_.source->info());
  buildModelOnMesh(parts_, o, *mesh_, *device_, *data_.source, config, microBatchSize(), commTimeoutS);
  if (o.resume)
    if (auto latest = ckpt::latestCheckpoint(o.checkpointDir))
      firstStep_ = nextStep_ = checkpoints_.resume(*latest, data_.source->identity(), config, o, parts_, *mesh_);
  if (auto* average = dynamic_cast<AverageSync*>(parts_.sync.get())) average->continueAt(firstStep_);
  startLoader(data_, *device_, nextStep_, o.steps);
}

Trainer::~Trainer() = default;

bool Trainer::reachedTarget(const EvalResult& e) const { return wl::reachedTarget(options_, e); }

EvalResult Trainer::evaluate() {
  if (!eval_) throw Error("internal: Trainer::evaluate without --eval-every");
  return eval_->run(parts_, *device_, dataParallel(), nextStep_);
}

void Trainer::stop() {
  if (done()) return;
  stopped_ = true;
  if (options_.checkpointDir.empty()) return;
  // The step just trained has its checkpoint already when --checkpoint-every fell on it.
  if (!(options_.checkpointEvery > 0 && nextStep_ % options_.checkpointEvery == 0)) saveCheckpoint();
  finishCheckpoint();
}

std::string Trainer::saveCheckpoint() {
  if (options_.checkpointDir.empty()) return {};
  ckpt::TrainerState state;
  state.step = nextStep_;
  state.data = data_.source->identity();
  state.config = config();
  if (parts_.scaler) state.scaler = parts_.scaler->state();
  return checkpoints_.save(std::move(state), parts_, *mesh_);
}

std::string Trainer::finishCheckpoint() { return checkpoints_.finish(); }

MemoryAccount Trainer::memoryAccount() const { return {device_->memory(), setupPeak_, parts_.formula}; }

double Trainer::flopsPerStep() const {
  return 3.0 * parts_.model->forwardFlops() * static_cast<double>(options_.microBatches * dataParallel());
}
double Trainer::recomputeFlopsPerStep() const {
  return parts_.model->recomputedFlops() * static_cast<double>(options_.microBatches * dataParallel());
}
RankWork Trainer::rankWorkPerStep() {
  const auto updated = static_cast<double>(ownedParameterElements());
  if (mesh_->replicaIndex() >= mesh_->layout().workers()) return {0, 0, updated};  // a dedicated server trains none
  double forward = 0, recompute = 0;
  for (const Layer* l : parts_.part.layers) {
    forward += l->rankForwardFlops();
    recompute += l->rankRecomputedFlops();
  }
  const auto micro = static_cast<double>(options_.microBatches);
  // A pipeline stage also runs the forward again before a backward whose micro-batch its layers no longer hold.
  const double reforwards = parts_.pipeline ? parts_.pipeline->reforwardsPerStep() : 0;
  return {forward * micro, recompute * micro + forward * reforwards, updated};
}
std::int64_t Trainer::itemsPerStep() const { return parts_.model->itemsPerMicroBatch() * options_.microBatches * dataParallel(); }

nlohmann::json Trainer::resolved() const {
  const data::DataInfo& info = data_.source->info();
  nlohmann::json j = {{"model", parts_.model->config().toJson()},
                      {"micro_batch", microBatchSize()},
                      {"data_info", {{"name", info.name}, {"origin", info.origin}, {"size", info.size}}},
                      {"optimizer", options_.optimizer.toJson()},
                      {"schedule", options_.schedule.toJson()},
                      {"memory_limit_bytes", parseBytes(options_.memoryLimit, "--memory-limit")},
                      {"layout", options_.layout.toJson()}};
  // What --set layout resolved to (auto: the device's and build's choice); not part of the model's identity.
  if (const auto layout = parts_.model->imageLayout()) j["activation_layout"] = nameOf(*layout);
  return j;
}

nlohmann::json Trainer::config() const {
  nlohmann::json j = options_.given;
  j["resolved"] = resolved();
  return j;
}

}  // namespace ts::wl
