#include "workloads/trainer/trainer_options.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.h"
#include "base/units.h"
#include "workloads/data/data_source.h"
#include "workloads/device.h"
#include "workloads/mixed_precision.h"

namespace ts::wl {

ModelConfig modelConfigOf(const TrainOptions& o) {
  ModelConfig config = modelPreset(o.model, o.preset);
  for (const auto& a : o.overrides) applyModelOverride(config, a);
  config.seed = o.seed;
  config.dropout = o.dropout;
  config.recompute = o.recompute;
  config.moe.capacityFactor = o.capacityFactor;
  config.moe.auxCoef = o.auxLossCoef;
  config.moe.routerSkew = o.routerSkew;
  return config;
}

std::vector<std::int64_t> syntheticSampleShape(ModelKind kind) {
  return kind == ModelKind::kCnn ? std::vector<std::int64_t>{3, 32, 32} : std::vector<std::int64_t>{784};
}

ModelShare modelShareOf(const LayoutOptions& l) {
  // Tensor slices and pipeline stages divide the dense weights; ZeRO-2 shards the gradients over the replicas, ZeRO-3
  // the values too. A mixture's experts are whole on every tensor-parallel rank (moe.h) and divided over the
  // expert-parallel ranks and the stages, their ZeRO shards over an expert's own copies (the memory formula's
  // expertReplicas). Before, every expert counted on every rank: a model that only --ep spreads over the host was refused.
  const auto n = [](int size) { return static_cast<std::uint64_t>(std::max(1, size)); };
  const std::uint64_t model = n(l.tp) * n(l.pp), experts = n(groupSize(l, kExpertAxes)) * n(l.pp);
  const std::uint64_t replicas = n(l.replicas()), expertReplicas = n(groupSize(l, kExpertReplicaAxes));
  ModelShare s{.valueShards = model * (l.zero >= 3 ? replicas : 1),
               .gradientShards = model * (l.zero >= 2 ? replicas : 1),
               .by = {},  // below
               .expertValueShards = experts * (l.zero >= 3 ? expertReplicas : 1),
               .expertGradientShards = experts * (l.zero >= 2 ? expertReplicas : 1)};
  std::vector<std::string> how;
  if (l.tp > 1) how.push_back(fmt::format("--tp {}", l.tp));
  if (l.pp > 1) how.push_back(fmt::format("--pp {}", l.pp));
  if (l.ep > 1) how.push_back(fmt::format("--ep {}", l.ep));
  if (l.zero >= 2 && replicas > 1)
    how.push_back(fmt::format("--zero {} over {} replicas{}", l.zero, replicas,
                              expertReplicas == replicas ? ""
                              : expertReplicas > 1       ? fmt::format(" (each expert's over its {} copies)", expertReplicas)
                                                         : " (the experts unsharded: one copy each)"));
  s.by = fmt::format("{}", fmt::join(how, " "));
  return s;
}

void checkFitsTheHost(const ModelConfig& config, const DeviceSpec& device, const LayoutOptions& layout, int ranksOnHost) {
  if (device.cuda()) return;
  // The host's memory is shared by its ranks: each may count on its part of it only.
  const int local = std::max(1, ranksOnHost);
  checkModelFits(config, Device::hostMemoryBytes() / static_cast<std::uint64_t>(local),
                 local > 1 ? fmt::format("this host's memory over its {} ranks", local) : "this host's memory",
                 modelShareOf(layout));
}

namespace {
// --eval-every, --eval-batches and the targets that evaluations check.
void checkEvaluationOptions(const TrainOptions& o) {
  if (o.evalEvery < 0) throw UsageError(fmt::format("--eval-every {}: must be at least 0 (0: no evaluation)", o.evalEvery));
  if (o.evalBatches < 0)
    throw UsageError(fmt::format("--eval-batches {}: must be at least 0 (0: the whole held-out split)", o.evalBatches));
  if (!(o.targetAccuracy >= 0 && o.targetAccuracy <= 1))
    throw UsageError(fmt::format("--target-accuracy {}: a fraction in (0, 1]", o.targetAccuracy));
  if (!(o.targetLoss >= 0) || !std::isfinite(o.targetLoss))
    throw UsageError(fmt::format("--target-loss {}: must be a finite loss above 0", o.targetLoss));
  if ((o.targetAccuracy > 0 || o.targetLoss > 0) && o.evalEvery == 0)
    throw UsageError("--target-accuracy and --target-loss are checked at evaluations: give --eval-every N");
}

// The layout's choices against the model, the precision and the device.
void checkLayoutOptions(const TrainOptions& o) {
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
}

// The data's spec and the files it names (none read: the build loads them), the held-out split's too when evaluated.
void checkDataOptions(const TrainOptions& o) {
  data::DataOptions d;
  d.spec = o.data;
  d.task = o.model == ModelKind::kTransformer ? data::Task::kLanguageModel : data::Task::kClassification;
  data::checkDataSource(d);
  if (o.evalEvery > 0) {
    d.split = data::Split::kHeldOut;
    data::checkDataSource(d);
  }
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
  // Before the world is known a ZeRO-2/3 layout's data-parallel size is not (--dp 0): the check waits for the mesh.
  if (o.layout.zero < 2 || o.layout.dp > 0) checkFitsTheHost(model, o.device, o.layout, o.ranksOnHost);
  checkEvaluationOptions(o);
  checkLayoutOptions(o);
  if (!(o.dropout >= 0 && o.dropout < 1)) throw UsageError(fmt::format("--dropout {}: a probability in [0, 1)", o.dropout));
  if (o.dropout > 0 && o.device.cuda())
    throw UsageError("--dropout: dropout runs on the CPU only in this version (--device cpu)");
  checkDataOptions(o);
}

SyncBatchNorm resolveSyncBatchNorm(const TrainOptions& o, int dp) {
  if (o.layout.syncBn != SyncBatchNorm::kAuto) return o.layout.syncBn;
  return o.model == ModelKind::kCnn && dp > 1 && !o.device.cuda() && o.layout.sync != SyncKind::kAsyncParameterServer
             ? SyncBatchNorm::kOn
             : SyncBatchNorm::kOff;
}

}  // namespace ts::wl
