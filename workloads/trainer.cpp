#include "workloads/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include <fmt/format.h>

#include "base/error.h"
#include "base/json_text.h"
#include "base/units.h"
#include "kernels/cpu/convolution.h"
#include "kernels/trace.h"
#include "workloads/checkpoint/checkpoint.h"
#include "workloads/ops.h"
#include "workloads/parallel/average_sync.h"
#include "workloads/parallel/part_sums.h"
#include "workloads/training_state.h"

namespace ts::wl {
namespace {}  // namespace

nlohmann::json TrainOptions::toJson() const {
  return {{"model", nameOf(model)},
          {"preset", preset},
          {"set", overrides},
          {"steps", steps},
          {"batch", batch},
          {"micro_batches", microBatches},
          {"device", device.name()},
          {"precision", nameOf(precision)},
          {"loss_scale", precision == Precision::kFloat16 ? nlohmann::json(lossScale) : nlohmann::json()},
          {"optimizer", optimizer.toJson()},
          {"schedule", schedule.toJson()},
          {"clip_norm", clipNorm},
          {"seed", seed},
          {"data", data},
          {"checkpoint_dir", checkpointDir},
          {"checkpoint_every", checkpointEvery},
          {"resume", resume},
          {"checkpoint_async", checkpointAsync},
          {"layout", layout.toJson()},
          {"memory_limit_bytes", parseBytes(memoryLimit, "--memory-limit")},
          {"eval_every", evalEvery},
          {"augment", nameOf(augment)},
          {"dropout", dropout},
          {"eval_batches", evalBatches},
          {"target_accuracy", targetAccuracy > 0 ? nlohmann::json(targetAccuracy) : nlohmann::json()},
          {"target_loss", targetLoss > 0 ? nlohmann::json(targetLoss) : nlohmann::json()}};
}

namespace {
// The advice of a --memory-limit line: the layouts that hold less per rank.
constexpr const char* kSaveMemory = "try --zero 3, --tp or --pp";

std::string mib(double bytes) { return fmt::format("{:.1f} MiB", bytes / (1 << 20)); }

// What the layout's model states need by the formulas, against the limit: one line, before the layout
// takes its memory.
void checkModelStatesFit(const ModelStateBytes& f, std::size_t limit, const LayoutOptions& layout) {
  if (!limit || f.total() <= static_cast<double>(limit)) return;
  throw UsageError(
      fmt::format("--memory-limit {} per rank: {} needs {} of model states per rank (parameters {}, gradients {}, "
                  "optimizer {}{}) before any activation: {}",
                  formatBytes(limit), layout.name(), mib(f.total()), mib(f.parameters), mib(f.gradients), mib(f.optimizer),
                  f.masterWeights > 0 ? ", master weights " + mib(f.masterWeights) : "", kSaveMemory));
}

// The preset with the overrides and the seed (the data adds input shape and classes later).
ModelConfig modelConfigOf(const TrainOptions& o) {
  ModelConfig config = modelPreset(o.model, o.preset);
  for (const auto& a : o.overrides) applyModelOverride(config, a);
  config.seed = o.seed;
  config.dropout = o.dropout;
  return config;
}

// The samples synthetic data makes for a classifier (mnist and cifar10 bring their own).
std::vector<std::int64_t> syntheticSampleShape(ModelKind kind) {
  return kind == ModelKind::kCnn ? std::vector<std::int64_t>{3, 32, 32} : std::vector<std::int64_t>{784};
}

// A model built on the CPU holds its parameters and gradients in host memory: one that cannot is refused before any of
// it is allocated. (A GPU's allocations are counted and refused one by one; its memory is not known before it is opened.)
void checkFitsTheHost(const ModelConfig& config, const DeviceSpec& device, int tp) {
  if (!device.cuda()) checkModelFits(config, Device::hostMemoryBytes(), "this host's memory", tp);
}
}  // namespace

void validateTrainOptions(const TrainOptions& o) {
  if (o.steps < 1) throw UsageError(fmt::format("--steps {}: must be at least 1", o.steps));
  if (o.batch < 1) throw UsageError(fmt::format("--batch {}: must be at least 1", o.batch));
  if (o.microBatches < 1 || o.batch % o.microBatches)
    throw UsageError(fmt::format("--micro-batches {}: must be at least 1 and divide --batch {}", o.microBatches, o.batch));
  if (o.precision == Precision::kFloat16) LossScaler(o.lossScale, o.lossScaleInterval);  // checks the two
  if (o.clipNorm < 0) throw UsageError("--clip-norm must be >= 0 (0 = off)");
  if (o.checkpointEvery < 0) throw UsageError("--checkpoint-every must be >= 0");
  if ((o.resume || o.checkpointEvery > 0 || o.checkpointAsync) && o.checkpointDir.empty())
    throw UsageError("--resume, --checkpoint-every and --checkpoint-async need --checkpoint-dir");
  validateOptimizerOptions(o.optimizer);
  Schedule sched = o.schedule;
  sched.total = o.steps;
  validateSchedule(sched);
  parseBytes(o.memoryLimit, "--memory-limit");
  ModelConfig model = modelConfigOf(o);
  if (model.kind != ModelKind::kTransformer) {  // the data's shapes are checked when it is read (Trainer::build)
    model.inputShape = syntheticSampleShape(model.kind);
    model.classes = 10;
  }
  checkFitsTheHost(model, o.device, o.layout.tp);
  if (o.evalEvery < 0) throw UsageError(fmt::format("--eval-every {}: must be at least 0 (0: no evaluation)", o.evalEvery));
  if (o.evalBatches < 0)
    throw UsageError(fmt::format("--eval-batches {}: must be at least 0 (0: the whole held-out split)", o.evalBatches));
  if (!(o.targetAccuracy >= 0 && o.targetAccuracy <= 1))
    throw UsageError(fmt::format("--target-accuracy {}: a fraction in (0, 1]", o.targetAccuracy));
  if (!(o.targetLoss >= 0) || !std::isfinite(o.targetLoss))
    throw UsageError(fmt::format("--target-loss {}: must be a finite loss above 0", o.targetLoss));
  if ((o.targetAccuracy > 0 || o.targetLoss > 0) && o.evalEvery == 0)
    throw UsageError("--target-accuracy and --target-loss are checked at evaluations: give --eval-every N");
  if (o.layout.sync == SyncKind::kAverage && (o.precision == Precision::kBFloat16 || o.precision == Precision::kFloat16))
    throw UsageError(
        fmt::format("--sync average with --precision {}: not yet (the float32 master weights would be averaged "
                    "too); train in float32",
                    nameOf(o.precision)));
  if (o.layout.syncBn == SyncBatchNorm::kOn && o.model != ModelKind::kCnn)
    throw UsageError(fmt::format("--sync-bn on: the {} has no batch norm", nameOf(o.model)));
  if (o.layout.syncBn == SyncBatchNorm::kOn && o.device.cuda())
    throw UsageError("--sync-bn on: SyncBatchNorm runs on the CPU only in this version (--device cpu, or --sync-bn off)");
  if (o.layout.sync == SyncKind::kAsyncParameterServer) {
    // Each of these needs every rank at the same step, which ps-async's workers never are.
    const auto notWith = [](const std::string& what, const std::string& why) {
      throw UsageError(fmt::format("--sync ps-async with {}: {}", what, why));
    };
    if (o.clipNorm > 0) notWith("--clip-norm", "the global gradient norm needs every worker's gradient of a step at once");
    if (o.precision != Precision::kFloat32) notWith("--precision " + std::string(nameOf(o.precision)), "train in float32");
    if (o.optimizer.kind == OptimizerKind::kLamb) notWith("--optimizer lamb", "its trust ratio needs whole tensors' norms");
    if (!o.checkpointDir.empty()) notWith("--checkpoint-dir", "not yet (the servers' optimizer state is not saved)");
    if (o.evalEvery > 0) notWith("--eval-every", "not yet (the workers hold parameters of different versions)");
    if (o.layout.syncBn == SyncBatchNorm::kOn) notWith("--sync-bn on", "batch norm's statistics would be a per-step barrier");
    if (o.device.cuda()) notWith("--device cuda", "the CPU only in this version");
  }
  if (!(o.dropout >= 0 && o.dropout < 1)) throw UsageError(fmt::format("--dropout {}: a probability in [0, 1)", o.dropout));
  if (o.dropout > 0 && o.device.cuda())
    throw UsageError("--dropout: dropout runs on the CPU only in this version (--device cpu)");
  // The data's spec and the files it names (none read: build() loads them), the held-out split's too when evaluated.
  data::DataOptions d;
  d.spec = o.data;
  d.task = o.model == ModelKind::kTransformer ? data::Task::kLanguageModel : data::Task::kClassification;
  data::checkDataSource(d);
  if (o.evalEvery > 0) {
    d.split = data::Split::kHeldOut;
    data::checkDataSource(d);
  }
}

SyncBatchNorm resolveSyncBatchNorm(const TrainOptions& o, int dp) {
  if (o.layout.syncBn != SyncBatchNorm::kAuto) return o.layout.syncBn;
  return o.model == ModelKind::kCnn && dp > 1 && !o.device.cuda() && o.layout.sync != SyncKind::kAsyncParameterServer
             ? SyncBatchNorm::kOn
             : SyncBatchNorm::kOff;
}

Trainer::Trainer(const TrainOptions& options, const Mesh* mesh, double commTimeoutS) : options_(options), mesh_(mesh) {
  const TrainOptions& o = options_;
  validateTrainOptions(o);
  if (!mesh_) {
    ownMesh_ = std::make_unique<Mesh>(resolveLayout(o.layout, 1), nullptr);
    mesh_ = ownMesh_.get();
  }
  options_.layout = mesh_->layout();
  options_.layout.syncBn = resolveSyncBatchNorm(o, options_.layout.dataShards());
  const LayoutOptions& layout = options_.layout;
  if (o.batch % (o.microBatches * layout.workers()))
    throw UsageError(fmt::format("--batch {} does not split into {} data-parallel rank(s) x {} micro-batch(es)", o.batch,
                                 layout.workers(), o.microBatches));
  options_.schedule.total = o.steps;
  options_.schedule.scaleFor(o.batch);  // --lr-scaling: the rates for this global batch
  checkpointStats_.async = o.checkpointAsync;
  device_ = Device::open(o.device);  // first: a missing GPU is reported before any data is read
  device_->setMatmulPrecision(o.precision);
  device_->setMemoryLimit(parseBytes(o.memoryLimit, "--memory-limit"));
  try {
    build(commTimeoutS);
  } catch (const MemoryLimitExceeded& e) {
    throw UsageError(fmt::format(
        "--memory-limit {} per rank: building the model for layout {} needed {} more for {} with {} in "
        "use: {}",
        formatBytes(e.limit), layout.name(), formatBytes(e.bytes), nameOf(e.kind), formatBytes(e.inUse), kSaveMemory));
  }
  // The record's peaks are the steps': setup built the whole model before the layout gave its share back.
  setupPeak_ = device_->memory().totalPeak;
  device_->resetPeaks();
}

void Trainer::build(double commTimeoutS) {
  const TrainOptions& o = options_;
  const LayoutOptions& layout = options_.layout;

  ModelConfig config = modelConfigOf(o);

  data::DataOptions d;
  d.spec = o.data;
  const bool language = o.model == ModelKind::kTransformer;
  d.task = language ? data::Task::kLanguageModel : data::Task::kClassification;
  d.seed = o.seed;
  d.globalBatch = o.batch;
  // Split over the ranks that train (a dedicated ps-async server reads shard 0 and never trains on it).
  const int dataIndex = mesh_->dataIndex();
  d.shard = {dataIndex < layout.workers() ? dataIndex : 0, layout.workers()};
  d.syntheticSize = o.syntheticSize;
  d.augment = o.augment;
  if (!language) d.sampleShape = syntheticSampleShape(o.model);
  d.seqLen = config.seqLen;
  d.vocab = static_cast<int>(std::min<std::int64_t>(config.vocab, 1 << 20));
  source_ = std::make_unique<data::DataSource>(data::makeDataSource(d));
  if (o.evalEvery > 0) {
    // The held-out split in batches of what the model is built for on every rank: dp x micro-batch samples.
    data::DataOptions e = d;
    e.split = data::Split::kHeldOut;
    e.globalBatch = microBatchSize() * layout.dataShards();
    evalSource_ = std::make_unique<data::DataSource>(data::makeDataSource(e));
    const std::int64_t whole = evalSource_->info().size / e.globalBatch;
    if (whole < 1)
      throw UsageError(
          fmt::format("--eval-every: the held-out split of --data {} has {} samples, fewer than one evaluation "
                      "batch ({} = {} data-parallel rank(s) x {} per micro-batch)",
                      o.data, evalSource_->info().size, e.globalBatch, layout.dataShards(), microBatchSize()));
    evalBatches_ = o.evalBatches > 0 ? std::min(o.evalBatches, whole) : whole;
    evalSamples_ = evalBatches_ * e.globalBatch;
  }
  const data::DataInfo& info = source_->info();
  if (!language) {
    config.inputShape = info.sampleShape;
    config.classes = info.classes;
  }
  validateModelConfig(config, info);
  checkFitsTheHost(config, o.device, layout.tp);
  model_ = makeModel(config, microBatchSize(), *device_, TensorParallel{mesh_->coordinate(GroupKind::kTp), layout.tp});
  if (Communicator* tp = mesh_->group(GroupKind::kTp))
    tp_ = std::make_unique<TensorParallelGroup>(*tp, commTimeoutS, groupLabel(*mesh_, GroupKind::kTp));
  if (layout.syncBn == SyncBatchNorm::kOn)
    if (Communicator* data = mesh_->dataGroup())
      syncBn_ = std::make_unique<SyncBatchNormGroup>(*data, commTimeoutS, groupLabel(*mesh_, kDataAxes));
  if (layout.pp > 1) {
    const data::Batch sample = source_->batch(0).slice(0, microBatchSize());  // its shapes size the stages' buffers
    pipeline_ = std::make_unique<Pipeline>(*mesh_, *model_, commTimeoutS, sample, static_cast<int>(o.microBatches));
    part_ = pipeline_->part();
  } else {
    part_ = wholeModel(*model_);
  }
  ModelStateFacts facts;
  for (const Param* p : part_.params) facts.elements += p->value.numel();
  facts.replicas = layout.replicas();
  facts.zero = layout.zero;
  const bool async = layout.sync == SyncKind::kAsyncParameterServer;
  facts.parameterServer = (layout.sync == SyncKind::kParameterServer || async) && layout.replicas() > 1;
  facts.psShards = async && layout.psServers > 0 ? layout.psServers : layout.psShards;
  const int replica = mesh_->replicaIndex();
  facts.server = async && layout.psServers > 0 ? replica >= layout.workers() : replica < layout.psShards;
  facts.optimizerSlots = keepsTwoMoments(o.optimizer.kind) ? 2 : 1;
  facts.masterWeights = o.precision == Precision::kBFloat16 || o.precision == Precision::kFloat16;
  formula_ = modelStateFormula(facts);
  checkModelStatesFit(formula_, device_->memoryLimit(), layout);
  if (Communicator* replicas = mesh_->replicaGroup(); replicas && async) {
    auto ps = std::make_unique<AsyncPsSync>(*replicas, part_, layout, o.steps, commTimeoutS);
    asyncPs_ = ps.get();
    sync_ = std::move(ps);
    sync_->setTraceLabel(groupLabel(*mesh_, kReplicaAxes));
  } else {
    sync_ = makeGradientSync(*mesh_, part_, commTimeoutS);
  }
  // LAMB's norms are whole tensors': where this rank updates parts of some, they are added over the ranks.
  const bool parts = tp_ || (layout.replicas() > 1 && (layout.zero > 0 || layout.sync == SyncKind::kParameterServer));
  const std::vector<Param*> updating = sync_->updateParams();
  optimizer_ = std::make_unique<Optimizer>(o.optimizer, updating, model_->arena(),
                                           o.optimizer.kind == OptimizerKind::kLamb && parts
                                               ? lambPartSums(updating, part_, *mesh_, *sync_, tp_.get())
                                               : Optimizer::PartSums{});
  if (o.precision == Precision::kBFloat16 || o.precision == Precision::kFloat16) {
    model_->setComputePrecision(o.precision);
    masters_ = std::make_unique<MasterWeights>(o.precision, updating, sync_->keptParams(), model_->arena());
  }
  if (o.precision == Precision::kFloat16) scaler_ = std::make_unique<LossScaler>(o.lossScale, o.lossScaleInterval);
  // A ps-async server updates its shard when a clock's gradients are all in, at that step's rate.
  if (asyncPs_)
    asyncPs_->setUpdate([this](std::int64_t clock) {
      optimizer_->step(options_.schedule.at(clock), static_cast<int>(clock + 1));
      device_->synchronize();
    });
  if (auto* average = dynamic_cast<AverageSync*>(sync_.get()); average && layout.averageOptimizer) {
    std::vector<Tensor*> state;
    for (const Optimizer::State& s : optimizer_->state()) state.push_back(s.tensor);
    average->alsoAverage(std::move(state));
  }

  if (o.resume)
    if (auto latest = ckpt::latestCheckpoint(o.checkpointDir)) resumeFrom(*latest, config);
  if (auto* average = dynamic_cast<AverageSync*>(sync_.get())) average->continueAt(firstStep_);
  // The loader thread produces batches two steps ahead and, on a GPU, uploads them (pinned memory, a side
  // stream): the step's data phase is then only the wait for a batch that is not ready yet.
  constexpr int kPrefetchDepth = 2;
  loader_ = std::make_unique<data::Prefetcher>(*source_, nextStep_, kPrefetchDepth,
                                               stagingHook(*device_, kPrefetchDepth, stager_), o.steps);
}

// A save between its snapshot and its commit: the host copy the writer reads, and the writer.
struct Trainer::PendingSave {
  std::unique_ptr<ckpt::CheckpointSave> save;
  ckpt::TrainerState state;
  std::vector<std::vector<float>> values;
  std::vector<ckpt::Piece> pieces;
  std::thread writer;
  ~PendingSave() {
    if (writer.joinable()) writer.join();
  }
};

// Every tensor this rank holds, from whichever pieces of the checkpoint cover it: the same layout or another.
void Trainer::resumeFrom(const std::string& stepDir, const ModelConfig& config) {
  ckpt::CheckpointReader c = ckpt::CheckpointReader::open(stepDir);
  const ckpt::TrainerState& s = c.state();
  if (s.data != source_->identity())
    throw UsageError(fmt::format("--resume: {} was trained on other data ({}), not {}", c.directory(), jsonText(s.data),
                                 jsonText(source_->identity())));
  if (s.config.value("model", nlohmann::json()) != config.toJson())
    throw UsageError(
        fmt::format("--resume: {} holds another model ({})", c.directory(), jsonText(s.config.value("model", nlohmann::json()))));
  const nlohmann::json theirs = s.config.value("optimizer", nlohmann::json::object()).value("kind", nlohmann::json());
  if (theirs != options_.optimizer.toJson().value("kind", nlohmann::json()))
    throw UsageError(fmt::format("--resume: {} was trained with --optimizer {}, not {}", c.directory(),
                                 theirs.is_string() ? theirs.get<std::string>() : jsonText(theirs),
                                 nameOf(options_.optimizer.kind)));
  // Replicas saved between averagings continue only as the same replicas: each data-parallel rank its own.
  const bool replicas = std::any_of(c.tensors().begin(), c.tensors().end(),
                                    [](const ckpt::CheckpointReader::Tensor& t) { return t.kind == ckpt::StateKind::kReplica; });
  const nlohmann::json savedLayout = s.config.value("layout", nlohmann::json::object());
  const nlohmann::json savedReplicas = recordedGroupSize(savedLayout, kReplicaAxes);
  if (replicas && (options_.layout.sync != SyncKind::kAverage || savedReplicas != options_.layout.replicas())) {
    const std::string saved = jsonText(savedReplicas);
    const std::string mine = options_.layout.sync == SyncKind::kAverage
                                 ? std::to_string(options_.layout.replicas())
                                 : fmt::format("{} under --sync {}", options_.layout.replicas(), nameOf(options_.layout.sync));
    throw UsageError(
        fmt::format("--resume: {} holds the {} data-parallel replicas of --sync average apart (saved between "
                    "two averagings, or without --average-optimizer): resume it with --sync average on {} "
                    "data-parallel ranks, not {}",
                    c.directory(), saved, saved, mine));
  }
  const int replica = mesh_->replicaIndex();
  for (const StateTensor& t : stateTensors(*sync_, *optimizer_, part_, *mesh_, StateUse::kLoad)) {
    std::vector<float> values(static_cast<std::size_t>(t.region.elements()));
    const std::string own = replica > 0 ? replicaName(t.tensor, replica) : std::string();
    c.read(replicas && replica > 0 && c.find(own) ? own : t.tensor, t.region, values.data());
    t.value->fromHost(values);
  }
  if (scaler_) scaler_->restore(s.scaler);
  firstStep_ = nextStep_ = s.step;
  if (firstStep_ >= options_.steps)
    throw UsageError(
        fmt::format("--resume: {} is at step {}, and --steps {} asks for no more", c.directory(), firstStep_, options_.steps));
  checkpointStats_.readBytes = c.bytesRead();
  checkpointStats_.readS = c.readSeconds();
}

Trainer::~Trainer() = default;

MemoryAccount Trainer::memoryAccount() const { return {device_->memory(), setupPeak_, formula_}; }

double Trainer::flopsPerStep() const {
  return 3.0 * model_->forwardFlops() * static_cast<double>(options_.microBatches * dataParallel());
}
std::int64_t Trainer::itemsPerStep() const { return model_->itemsPerMicroBatch() * options_.microBatches * dataParallel(); }

nlohmann::json Trainer::resolved() const {
  nlohmann::json j = {
      {"model", model_->config().toJson()},
      {"micro_batch", microBatchSize()},
      {"data_info", {{"name", source_->info().name}, {"origin", source_->info().origin}, {"size", source_->info().size}}},
      {"optimizer", options_.optimizer.toJson()},
      {"schedule", options_.schedule.toJson()},
      {"memory_limit_bytes", parseBytes(options_.memoryLimit, "--memory-limit")}};
  // What --set layout resolved to (auto: the device's and build's choice); not part of the model's identity.
  if (const auto layout = model_->imageLayout()) j["activation_layout"] = nameOf(*layout);
  return j;
}

nlohmann::json Trainer::resolvedConfig() const {
  nlohmann::json j = options_.toJson();
  j.update(resolved());
  return j;
}

StepResult Trainer::step() {
  const std::int64_t step = nextStep_;
  try {
    return trainStep();
  } catch (const MemoryLimitExceeded& e) {
    // The same line as a layout that cannot be built, for a step that needs more than its setup did (ZeRO-3
    // gathers parameters inside each step), naming the step.
    throw UsageError(fmt::format("--memory-limit {} per rank: train step {} needed {} more for {} with {} in use: {}",
                                 formatBytes(e.limit), step, formatBytes(e.bytes), nameOf(e.kind), formatBytes(e.inUse),
                                 kSaveMemory));
  }
}

StepResult Trainer::trainStep() {
  if (done()) throw Error("internal: Trainer::step after the last step");
  StepResult r;
  r.step = nextStep_;
  // Every phase is a trace span (and an NVTX range); the phase times are the spans' lengths.
  trace::Span stepSpan("step", "step", static_cast<int>(r.step));
  if (trace::enabled()) stepSpan.annotate({{"step", r.step}});  // no JSON built per step otherwise
  if (asyncPs_ && !asyncPs_->worker()) return serveStep(r, stepSpan);
  trace::Span dataSpan("data", "phase");
  data::Prefetcher::Next next = loader_->next();
  dataSpan.close();
  r.dataS = next.waitSeconds;
  model_->zeroGrads();
  if (asyncPs_) {  // the parameter versions this step may use (waiting, if it is more than --staleness ahead)
    trace::Span wait("sync", "phase");
    r.staleness = asyncPs_->beginStep(r.step);
    r.syncS += wait.close();
  }
  if (masters_) masters_->beginStep();
  r.lossScale = scaler_ ? scaler_->scale() : 1.0;
  StepContext ctx;
  if (tp_) tp_->install(ctx);
  if (syncBn_) syncBn_->install(ctx);
  const std::int64_t M = options_.microBatches, mb = microBatchSize();
  // The step's loss is the mean over every rank's micro-batches: each backward takes its share. Under model
  // averaging each rank's gradient is its own batch's mean (it steps on it alone).
  const int shares = options_.layout.sync == SyncKind::kAverage ? 1 : dataParallel();
  const auto scale = static_cast<float>(r.lossScale / static_cast<double>(M * shares));
  double loss = 0;
  if (pipeline_) {
    std::vector<data::Batch> micros;
    for (std::int64_t i = 0; i < M; ++i) micros.push_back(next.batch.slice(i * mb, (i + 1) * mb));
    PipelineTimes times;
    loss = pipeline_->step(micros, scale, *sync_, ctx, times);
    r.forwardS = times.forwardS;
    r.backwardS = times.backwardS;
    r.syncS = times.syncS;
    r.pipelineWaitS = times.waitS;
    lastIndices_ = micros.back().sampleIndices;
  }
  for (std::int64_t i = 0; !pipeline_ && i < M; ++i) {
    const bool last = i == M - 1;
    const data::Batch micro = M == 1 ? std::move(next.batch) : next.batch.slice(i * mb, (i + 1) * mb);
    trace::Span forward("forward", "compute", static_cast<int>(i));
    sync_->beforeForward(ctx);
    lastMicroLoss_ = model_->forward(micro, ctx);
    loss += lastMicroLoss_;
    lastIndices_ = micro.sampleIndices;
    device_->synchronize();
    r.forwardS += forward.close();
    trace::Span backward("backward", "compute", static_cast<int>(i));
    sync_->beforeBackward(ctx, last);
    model_->backward(scale, ctx);
    device_->synchronize();
    r.backwardS += backward.close();
    trace::Span sync("sync", "phase");
    sync_->afterBackward(last);
    r.syncS += sync.close();
  }
  if (asyncPs_) return finishAsyncStep(r, loss, stepSpan);
  trace::Span syncSpan("sync", "phase");
  if (pipeline_) loss = pipeline_->sumOverStages(loss, false);  // the last stage's
  r.loss = sync_->groupMean(loss / static_cast<double>(M));     // every rank's mean: the same on all, so all decide alike
  if (masters_) masters_->endStep();
  if (!std::isfinite(r.loss)) throw Error(fmt::format("step {}: the loss is {} (diverged; lower --lr)", r.step, r.loss));
  const std::vector<Param*> params = sync_->updateParams();
  // Over the whole model: this rank's share, then the data-parallel shards, the tensor-parallel slices
  // (replicated tensors once), and the pipeline stages.
  auto global = [&](double sliced, double replicated) {  // the collectives in one order on every rank
    double sq = sync_->globalSumOfSquares(replicated);
    const double s = sync_->globalSumOfSquares(sliced);
    sq += tp_ ? tp_->sum(s) : s;
    return pipeline_ ? pipeline_->sumOverStages(sq, true) : sq;
  };
  // The gradient norm's own sums are the update's compute, timed with the optimizer (as the clipping is, inside
  // its span); only their sums over the ranks are the sync's (on one process the sync column timed the norm alone).
  double normS = 0;
  auto sumOfSquares = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    double sliced = 0, replicated = 0;  // each sum a value on the host: its device work is done
    for (Param* p : params)
      (p->tpShard() ? sliced : replicated) += ops::sumOfSquares(*p->grad.device, p->grad.data, p->grad.numel());
    normS += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return global(sliced, replicated);
  };
  r.lr = options_.schedule.at(r.step);
  // The overflow check needs only every rank to see the same (finite or not) sum.
  if (scaler_ && !scaler_->unscaleAndCheck(params, [&](double sq) { return global(sq, 0); })) {
    r.skipped = true;  // the gradients overflowed: no update, a smaller scale next step
    r.gradNorm = NAN;
  } else {
    r.gradNorm = std::sqrt(sumOfSquares());
    // Global, so every rank stops alike; before the update, so the weights of the steps kept stay finite.
    if (!std::isfinite(r.gradNorm))
      throw Error(fmt::format("step {}: the gradient norm is {} (diverged; lower --lr)", r.step, r.gradNorm));
    r.syncS += syncSpan.close() - normS;
    trace::Span optimizerSpan("optimizer", "compute");
    if (options_.clipNorm > 0 && r.gradNorm > options_.clipNorm) {  // done on the device by the synchronize below
      const float s = static_cast<float>(options_.clipNorm / r.gradNorm);
      for (Param* p : params) ops::scale(*p->grad.device, p->grad.data, s, p->grad.numel());
    }
    // Adam's bias correction counts the updates made, not the steps (a skipped step made none).
    optimizer_->step(r.lr, static_cast<int>(r.step + 1 - (scaler_ ? scaler_->skippedSteps() : 0)));
    device_->synchronize();
    r.optimizerS = optimizerSpan.close() + normS;
    trace::Span afterUpdate("sync", "phase");
    sync_->afterUpdate();
    r.syncS += afterUpdate.close();
  }
  if (r.skipped && masters_ && masters_->shardsMasters()) sync_->afterUpdate();  // the values float32 again
  if (r.skipped) r.syncS += syncSpan.close();
  r.comm = sync_->takeStepComm();
  for (StepComm p : {pipeline_ ? pipeline_->takeStepComm() : StepComm{}, tp_ ? tp_->takeStepComm() : StepComm{},
                     syncBn_ ? syncBn_->takeStepComm() : StepComm{}}) {
    r.comm.communicationS += p.communicationS;
    r.comm.exposedS += p.exposedS;
    r.comm.collectives.insert(r.comm.collectives.end(), p.collectives.begin(), p.collectives.end());
  }
  ++nextStep_;
  r.totalS = stepSpan.close();
  if (!options_.checkpointDir.empty() &&
      ((options_.checkpointEvery > 0 && nextStep_ % options_.checkpointEvery == 0) || done())) {
    trace::Span checkpoint("checkpoint", "phase");
    saveCheckpoint();
    r.checkpointS = checkpoint.close();
    checkpointStats_.stallS.push_back(r.checkpointS);
    if (done()) finishCheckpoint();  // training is over: the last save's write is no longer a stall
  }
  return r;
}

// A dedicated ps-async server's step: the update of this clock, once every worker's gradient is in, sent to
// the workers; no batch of its own. After the last, every worker holds the final values.
StepResult Trainer::serveStep(StepResult& r, trace::Span& stepSpan) {
  trace::Span sync("sync", "phase");
  asyncPs_->serve(r.step);
  r.lr = options_.schedule.at(r.step);
  ++nextStep_;
  if (done()) asyncPs_->finish();
  r.syncS = sync.close();
  r.comm = asyncPs_->takeWaits();
  r.totalS = stepSpan.close();
  return r;
}

// A ps-async worker's step after its backward (its gradient sent): no group mean and no update here. Its
// loss and gradient norm are its own batch's (the norm of its gradient before the 1 / workers scaling).
StepResult Trainer::finishAsyncStep(StepResult& r, double loss, trace::Span& stepSpan) {
  r.loss = loss / static_cast<double>(options_.microBatches);
  if (!std::isfinite(r.loss)) throw Error(fmt::format("step {}: the loss is {} (diverged; lower --lr)", r.step, r.loss));
  double sq = 0;
  for (Param* p : model_->params()) sq += ops::sumOfSquares(*p->grad.device, p->grad.data, p->grad.numel());
  r.gradNorm = std::sqrt(sq) * dataParallel();
  r.lr = options_.schedule.at(r.step);
  ++nextStep_;
  if (done()) {
    trace::Span last("sync", "phase");
    asyncPs_->finish();
    r.syncS += last.close();
  }
  r.comm = asyncPs_->takeWaits();
  r.totalS = stepSpan.close();
  return r;
}

EvalResult Trainer::evaluate() {
  if (!evalSource_) throw Error("internal: Trainer::evaluate without --eval-every");
  trace::Span span("eval", "phase");
  const auto t0 = std::chrono::steady_clock::now();
  EvalResult e;
  e.step = nextStep_;
  StepContext ctx;
  ctx.training = false;
  ctx.evaluating = true;
  if (tp_) tp_->install(ctx);
  double lossSum = 0, correct = 0, rows = 0;
  std::vector<float> logits;
  for (std::int64_t i = 0; i < evalBatches_; ++i) {
    const data::Batch batch = evalSource_->batch(i);
    sync_->beforeForward(ctx);
    // Pipeline stages pass the batch along; the last one has the loss and the logits.
    double loss = 0;
    const Tensor* out = pipeline_ ? pipeline_->forwardOnly(batch, ctx, &loss) : &model_->logits();
    if (!pipeline_) loss = model_->forward(batch, ctx);
    const std::size_t n = batch.targets.size();
    if (out) {
      // Top-1 of each row of the logits ([samples, classes] or [tokens, vocabulary]) against its target.
      const std::size_t classes = out->numel() / n;
      logits.resize(out->numel());
      device_->download(logits.data(), out->data, logits.size() * sizeof(float));
      for (std::size_t r = 0; r < n; ++r) {
        const float* row = logits.data() + r * classes;
        correct += static_cast<double>(std::max_element(row, row + classes) - row == batch.targets[r]);
      }
      lossSum += loss * static_cast<double>(n);
    }
    rows += static_cast<double>(n);
  }
  sync_->afterForwardOnly();
  if (pipeline_) {  // the last stage's sums, on every stage
    lossSum = pipeline_->sumOverStages(lossSum, false);
    correct = pipeline_->sumOverStages(correct, false);
  }
  // The evaluation's collectives (ZeRO-3's gathers, tensor-parallel sums) are not the next step's.
  sync_->takeStepComm();
  if (tp_) tp_->takeStepComm();
  if (pipeline_) pipeline_->takeStepComm();
  // Every rank evaluates as many rows, so the group's mean of the ranks' means is the mean over all rows.
  e.loss = sync_->groupMean(lossSum / rows);
  e.accuracy = sync_->groupMean(correct / rows);
  e.perplexity = model_->itemKind() == ItemKind::kTokens ? std::exp(e.loss) : 0.0;
  e.items = static_cast<std::int64_t>(rows) * dataParallel();
  e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return e;
}

bool Trainer::reachedTarget(const EvalResult& e) const {
  return (options_.targetAccuracy > 0 && e.accuracy >= options_.targetAccuracy) ||
         (options_.targetLoss > 0 && e.loss <= options_.targetLoss);
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
  if (group_.size != mesh_->worldSize())
    throw Error(fmt::format("internal: a checkpoint of {} ranks with a save group of {}", mesh_->worldSize(), group_.size));
  std::string committed = finishCheckpoint();  // async: the previous save first
  auto p = std::make_unique<PendingSave>();
  p->state.step = nextStep_;
  p->state.data = source_->identity();
  p->state.config = resolvedConfig();
  if (scaler_) p->state.scaler = scaler_->state();
  p->save = std::make_unique<ckpt::CheckpointSave>(options_.checkpointDir, nextStep_, group_);
  // The snapshot: this rank's share of the state, copied to host memory (the training may go on after this).
  const std::vector<StateTensor> tensors = stateTensors(*sync_, *optimizer_, part_, *mesh_, StateUse::kSave);
  for (const StateTensor& t : tensors) p->values.push_back(t.value->toHost());
  for (std::size_t i = 0; i < tensors.size(); ++i)
    p->pieces.push_back({tensors[i].tensor, tensors[i].kind, tensors[i].region, p->values[i].data()});
  const std::map<std::string, std::string> meta = {{"model", std::string(nameOf(model_->config().kind))},
                                                   {"preset", model_->config().preset},
                                                   {"trainscope_step", std::to_string(nextStep_)}};
  PendingSave* raw = p.get();
  pending_ = std::move(p);
  if (options_.checkpointAsync) {
    raw->writer = std::thread([raw, meta] { raw->save->write(raw->pieces, meta); });
    return committed;
  }
  raw->save->write(raw->pieces, meta);
  return finishCheckpoint();
}

std::string Trainer::finishCheckpoint() {
  if (!pending_) return {};
  std::unique_ptr<PendingSave> p = std::move(pending_);
  if (p->writer.joinable()) p->writer.join();
  const std::string dir = p->save->commit(p->state);
  checkpointStats_.bytes += p->save->totalBytes();
  checkpointStats_.writeS += p->save->slowestWriteSeconds();
  return dir;
}

nlohmann::json CheckpointStats::toJson() const {
  auto rate = [](double bytes, double s) { return s > 0 ? nlohmann::json(bytes / s) : nlohmann::json(); };
  double stall = 0;
  for (double s : stallS) stall += s;
  return {{"mode", async ? "async" : "sync"},
          {"saves", stallS.size()},
          {"stall_s", stallS},
          {"stall_total_s", stall},
          {"write_bytes", bytes},
          {"write_s", writeS},
          {"write_bytes_per_s", rate(static_cast<double>(bytes), writeS)},
          {"read_bytes", readBytes},
          {"read_s", readS},
          {"read_bytes_per_s", rate(static_cast<double>(readBytes), readS)}};
}

}  // namespace ts::wl
