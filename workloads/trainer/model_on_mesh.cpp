#include "workloads/trainer/model_on_mesh.h"

#include <fmt/format.h>

#include "base/error.h"
#include "base/units.h"
#include "workloads/layers/param_init.h"
#include "workloads/parallel/average_sync.h"
#include "workloads/parallel/part_sums.h"
#include "workloads/trainer/ps_async_steps.h"

namespace ts::wl {
namespace {
std::string mib(double bytes) { return fmt::format("{:.1f} MiB", bytes / (1 << 20)); }

// What the layout's model states need by the formulas, against the limit: one line, before the layout
// takes its memory.
// The model states alone: what is in flight (ZeRO-3's layers) is a bound that counts the largest layer for every
// one in flight, so a run it would refuse may fit; a step that does not fit ends with its own line.
void checkModelStatesFit(const ModelStateBytes& f, std::size_t limit, const LayoutOptions& layout) {
  if (!limit || f.total() <= static_cast<double>(limit)) return;
  throw UsageError(
      fmt::format("--memory-limit {} per rank: {} needs {} of model states per rank (parameters {}, gradients {}, "
                  "optimizer {}{}) before any activation: {}",
                  formatBytes(limit), layout.name(), mib(f.total()), mib(f.parameters), mib(f.gradients), mib(f.optimizer),
                  f.masterWeights > 0 ? ", master weights " + mib(f.masterWeights) : "", saveMemoryAdvice(layout)));
}

// The model, its tensor-parallel and SyncBatchNorm groups, and the part of it this rank trains.
void placeModel(ModelOnMesh& m, const TrainOptions& o, const Mesh& mesh, Device& device, const data::DataSource& source,
                const ModelConfig& config, std::int64_t microBatch, double commTimeoutS) {
  const LayoutOptions& layout = o.layout;
  // Deferred: the layout materialises what this rank keeps (buildModelOnMesh), never the whole model first.
  // A pipeline rank cuts a probe of the whole model, whose activations are all scratch, and builds its stage's.
  const std::optional<PipelineCut> cut = pipelineCutOf(mesh, device, source, config, microBatch);
  m.model = makeModel(placedConfigOf(config, mesh, cut), microBatch, device, tensorParallelOf(mesh), ParamStorage::kDeferred);
  if (Communicator* tp = mesh.group(GroupKind::kTp))
    m.tp = std::make_unique<TensorParallelGroup>(*tp, commTimeoutS, mesh.groupId(GroupKind::kTp));
  if (Communicator* ep = mesh.group(kExpertAxes))
    m.ep = std::make_unique<ExpertParallelGroup>(*ep, commTimeoutS, mesh.groupId(kExpertAxes), mesh.coordinate(kExpertAxes));
  if (layout.syncBn == SyncBatchNorm::kOn)
    if (Communicator* data = mesh.dataGroup())
      m.syncBn = std::make_unique<SyncBatchNormGroup>(*data, commTimeoutS, mesh.groupId(kDataAxes));
  if (cut) {
    m.pipeline = std::make_unique<Pipeline>(mesh, *m.model, *cut, commTimeoutS, static_cast<int>(o.microBatches));
    m.part = m.pipeline->part();
  } else {
    m.part = wholeModel(*m.model);
  }
}

// What the layout's formula says this rank's model states take.
// The facts of the layout and the run; the caller adds the part's elements.
ModelStateFacts layoutFacts(const TrainOptions& o, const Mesh& mesh) {
  const LayoutOptions& layout = o.layout;
  const int replica = mesh.replicaIndex();
  ModelStateFacts facts;
  facts.replicas = layout.replicas();
  facts.expertReplicas = groupSize(layout, kExpertReplicaAxes);
  facts.zero = layout.zero;
  const bool async = layout.sync == SyncKind::kAsyncParameterServer;
  facts.parameterServer = (layout.sync == SyncKind::kParameterServer || async) && layout.replicas() > 1;
  facts.psShards = async && layout.psServers > 0 ? layout.psServers : layout.psShards;
  facts.server = async && layout.psServers > 0 ? replica >= layout.workers() : replica < layout.psShards;
  facts.optimizerSlots = keepsTwoMoments(o.optimizer.kind) ? 2 : 1;
  facts.masterWeights = o.precision == Precision::kBFloat16 || o.precision == Precision::kFloat16;
  facts.prefetch = layout.prefetch;
  return facts;
}

// Without tensor or pipeline parallelism a rank's part is the whole model, its own experts under expert parallelism,
// whose parameters the placed config counts: the formula's check comes before anything is built (the layers take
// their activation buffers as they are built, so a cap the model states miss would otherwise be reported as the
// activations').
void checkModelStatesBeforeBuilding(const TrainOptions& o, const Mesh& mesh, const ModelConfig& config, std::size_t limit) {
  if (!limit || o.layout.tp > 1 || o.layout.pp > 1) return;
  const std::optional<std::uint64_t> count = modelParameterCount(placedConfigOf(config, mesh, std::nullopt));
  if (!count) return;  // checkFitsTheHost has said so
  ModelStateFacts facts = layoutFacts(o, mesh);
  facts.elements = *count;
  checkModelStatesFit(modelStateFormula(facts), limit, o.layout);
}

// The layout's gradient sync: ps-async's own, or the one makeGradientSync picks.
void makeSync(ModelOnMesh& m, const TrainOptions& o, const Mesh& mesh, double commTimeoutS) {
  const LayoutOptions& layout = o.layout;
  const bool async = layout.sync == SyncKind::kAsyncParameterServer;
  if (Communicator* replicas = mesh.replicaGroup(); replicas && async) {
    auto ps = std::make_unique<AsyncPsSync>(*replicas, m.part, layout, o.steps, commTimeoutS);
    m.asyncPs = ps.get();
    m.sync = std::move(ps);
    m.sync->setGroup(mesh.groupId(kReplicaAxes));
  } else {
    m.sync = makeGradientSync(mesh, m.part, commTimeoutS);
  }
}

// The optimizer of the parameters this rank updates, mixed precision's master weights and loss scaler.
void makeOptimizer(ModelOnMesh& m, const TrainOptions& o, const Mesh& mesh, Device& device) {
  const LayoutOptions& layout = o.layout;
  // LAMB's norms are whole tensors': where this rank updates parts of some, they are added over the ranks.
  const bool parts = m.tp || (layout.replicas() > 1 && (layout.zero > 0 || layout.sync == SyncKind::kParameterServer));
  const std::vector<Param*> updating = m.sync->updateParams();
  m.optimizer = std::make_unique<Optimizer>(o.optimizer, updating, m.model->arena(),
                                            o.optimizer.kind == OptimizerKind::kLamb && parts
                                                ? lambPartSums(updating, m.part, mesh, *m.sync, m.tp.get())
                                                : Optimizer::PartSums{});
  if (o.precision == Precision::kBFloat16 || o.precision == Precision::kFloat16) {
    m.model->setComputePrecision(o.precision);
    m.masters = std::make_unique<MasterWeights>(o.precision, updating, m.sync->keptParams(), m.model->arena());
  }
  if (o.precision == Precision::kFloat16) m.scaler = std::make_unique<LossScaler>(o.lossScale, o.lossScaleInterval);
  if (m.asyncPs) installPsAsyncUpdate(*m.asyncPs, *m.optimizer, o.schedule, device);
  if (auto* average = dynamic_cast<AverageSync*>(m.sync.get()); average && layout.averageOptimizer) {
    std::vector<Tensor*> state;
    for (const Optimizer::State& s : m.optimizer->state()) state.push_back(s.tensor);
    average->alsoAverage(std::move(state));
  }
}
}  // namespace

TensorParallel tensorParallelOf(const Mesh& mesh) { return {mesh.coordinate(GroupKind::kTp), mesh.size(GroupKind::kTp)}; }

std::optional<PipelineCut> pipelineCutOf(const Mesh& mesh, Device& device, const data::DataSource& source,
                                         const ModelConfig& config, std::int64_t microBatch) {
  if (mesh.size(GroupKind::kPp) <= 1) return std::nullopt;
  const data::Batch sample = source.batch(0).slice(0, microBatch);  // its shapes size the stages' buffers
  ModelConfig probe = config;
  probe.built = BuiltLayers::none();
  return cutPipeline(mesh, *makeModel(probe, microBatch, device, tensorParallelOf(mesh), ParamStorage::kDeferred), sample);
}

ModelConfig placedConfigOf(ModelConfig config, const Mesh& mesh, const std::optional<PipelineCut>& cut) {
  if (cut) config.built = {cut->range().from, cut->last() ? SIZE_MAX : cut->range().to, cut->last()};
  config.moe.ep = {mesh.coordinate(kExpertAxes), mesh.size(kExpertAxes)};
  return config;
}

ModelStateBytes modelStatesOf(const ModelPart& part, const TrainOptions& o, const Mesh& mesh) {
  const LayoutOptions& layout = o.layout;
  ModelStateFacts facts = layoutFacts(o, mesh);
  for (const Param* p : part.params) {
    facts.elements += p->value.numel();
    if (p->expert) facts.expertElements += p->value.numel();
  }
  const auto padded = [](std::size_t e, int ranks) {
    const auto n = static_cast<std::size_t>(std::max(1, ranks));
    return (e + n - 1) / n * n;
  };
  for (const Param* p : part.leading) facts.leadingElements += p->value.numel();
  facts.leadingElements = padded(facts.leadingElements, layout.replicas());
  // Under expert parallelism a layer's experts are a group of their own (expert_sync.h).
  const bool apart = facts.expertReplicas != facts.replicas;
  for (Layer* l : part.layers) {
    std::vector<Param*> ps;
    l->params(ps);
    std::size_t dense = 0, experts = 0;
    for (const Param* p : ps) (apart && p->expert ? experts : dense) += p->value.numel();
    facts.largestLayerElements = std::max(facts.largestLayerElements, padded(dense, layout.replicas()));
    facts.largestExpertLayerElements = std::max(facts.largestExpertLayerElements, padded(experts, facts.expertReplicas));
  }
  return modelStateFormula(facts);
}

std::string saveMemoryAdvice(const LayoutOptions& layout, std::optional<MemoryKind> short_) {
  if (short_ == MemoryKind::kActivations) return "try --recompute full (or selective), a smaller --batch or more --micro-batches";
  const std::string ep = groupSize(layout, kExpertAxes) > 1 ? ", a larger --ep (fewer experts per rank)" : "";
  if (layout.zero < 3) return fmt::format("try --zero 3{}, --tp or --pp", ep);
  return fmt::format("try more ranks{}, --tp or --pp{}", ep,
                     layout.prefetch > 0 ? ", or fewer layers gathered ahead (--prefetch)" : "");
}

void completeModelConfig(ModelConfig& config, const TrainOptions& o, const LayoutOptions& layout, const data::DataInfo& info) {
  if (o.model != ModelKind::kTransformer) {
    config.inputShape = info.sampleShape;
    config.classes = info.classes;
  }
  validateModelConfig(config, info);
  if (const int ep = groupSize(layout, kExpertAxes); ep > 1) {
    if (!config.moe.enabled())
      throw UsageError(
          fmt::format("--ep {}: the {} model has no experts to divide (give a mixture-of-experts preset, "
                      "moe-tiny or moe-small, or --set experts=E)",
                      ep, nameOf(config.kind)));
    if (config.moe.experts % ep)
      throw UsageError(fmt::format("--ep {} does not divide the {} experts of each mixture", ep, config.moe.experts));
  }
  checkFitsTheHost(config, o.device, layout, o.ranksOnHost);
}

void buildModelOnMesh(ModelOnMesh& m, const TrainOptions& o, const Mesh& mesh, Device& device, const data::DataSource& source,
                      const ModelConfig& config, std::int64_t microBatch, double commTimeoutS) {
  checkModelStatesBeforeBuilding(o, mesh, config, device.memoryLimit());
  placeModel(m, o, mesh, device, source, config, microBatch, commTimeoutS);
  m.formula = modelStatesOf(m.part, o, mesh);
  checkModelStatesFit(m.formula, device.memoryLimit(), o.layout);
  // What this rank keeps, and nothing else: its part (its stage's, its slices) as far as the sync needs it
  // materialised; the sync draws the rest into its own memory (flats, ZeRO-3's chunks).
  materialize(m.part.params, m.model->arena(), paramPartsForSync(mesh));
  makeSync(m, o, mesh, commTimeoutS);
  makeOptimizer(m, o, mesh, device);
}

}  // namespace ts::wl
