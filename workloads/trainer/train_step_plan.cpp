#include "workloads/trainer/train_step_plan.h"

#include <memory>

#include "comm/collectives/collective.h"
#include "workloads/parallel/bucket_plan.h"
#include "workloads/parallel/buckets.h"

namespace ts::wl {
namespace {

// A micro-batch's compute through the part's layers, around the hooks as Model::forwardLayers and backwardLayers
// call them, with each layer's collectives over a group (Layer::groupSums), all blocking: tensor parallel's sums
// (TensorParallelGroup::install's tracker.run), SyncBatchNorm's (SyncBatchNormGroup::install's tracker.sum) and a
// mixture's exchanges under expert parallelism (ExpertParallelGroup's tracker: gather's all-gather, exchange's
// alltoallv), on the groups placeModel gives them. A layer's compute is one event and its collectives follow it, in
// the order the layer asks for them (a mixture's experts compute between its dispatch and combine: the same time on
// the rank's one stream, every exchange being waited for at once).
// Each compute carries the FLOPs this rank computes (its tensor-parallel slice's, layer.h), not the model's: what its
// time is replayed from.
class PartPlan {
 public:
  PartPlan(const ModelPart& part, std::size_t firstLayer, const Mesh& mesh, StepPlan& plan, SyncPlan& sync)
      : part_(part), first_(firstLayer), plan_(plan), sync_(sync) {
    if (mesh.size(GroupKind::kTp) > 1) tp_ = planGroupOf(mesh, GroupKind::kTp);
    if (mesh.layout().syncBn == SyncBatchNorm::kOn && mesh.size(kDataAxes) > 1) bn_ = planGroupOf(mesh, kDataAxes);
    if (mesh.size(kExpertAxes) > 1) ep_ = planGroupOf(mesh, kExpertAxes);
    for (const Layer* l : part.layers) l->groupSums(sums_.emplace_back());
  }
  void forward(int micro, ComputePhase phase) {
    sync_.beforeForward(ctx_);
    for (std::size_t i = 0; i < part_.layers.size(); ++i) {
      call(ctx_.beforeForward, i);
      plan_.compute(phase, first_ + i, micro, part_.layers[i]->rankForwardFlops());
      groupSums(sums_[i].forward);
      call(ctx_.afterForward, i);
    }
  }
  void backward(int micro, bool last) {
    sync_.beforeBackward(ctx_, last);
    for (std::size_t i = part_.layers.size(); i-- > 0;) {
      const Layer& l = *part_.layers[i];
      call(ctx_.beforeBackward, i);
      if (l.rankRecomputedFlops() > 0) plan_.compute(ComputePhase::kRecompute, first_ + i, micro, l.rankRecomputedFlops());
      plan_.compute(ComputePhase::kBackward, first_ + i, micro, 2 * l.rankForwardFlops());  // trainer.cpp's convention
      call(ctx_.gradsReady, i);
      groupSums(sums_[i].backward);
      call(ctx_.afterBackward, i);
    }
    if (!part_.leading.empty()) call(ctx_.gradsReady, PlanContext::kLeading);  // the embeddings' backward, after the layers'
  }
  const std::optional<PlanGroup>& tp() const { return tp_; }
  const std::optional<PlanGroup>& ep() const { return ep_; }

 private:
  static void call(const std::function<void(std::size_t)>& hook, std::size_t i) {
    if (hook) hook(i);
  }
  void groupSums(const std::vector<GroupSum>& sums) {
    for (const GroupSum& s : sums) {
      switch (s.group) {
        case SumGroup::kTensorParallel:
          plan_.wait(plan_.issue(collectives::all_reduce(), s.values, sizeof(float), *tp_, CallPlacement::kInPlace));
          break;
        case SumGroup::kBatchNorm:
          if (bn_) plan_.sum(s.values, *bn_);  // batch norm's statistics: summed only under SyncBatchNorm
          break;
        case SumGroup::kExpertCounts:  // CommTracker::gather: the counts as float64
          plan_.wait(plan_.issue(collectives::all_gather(), s.values, sizeof(double), *ep_, CallPlacement::kInPlace));
          break;
        case SumGroup::kExpertExchange:  // ExpertParallelGroup::exchange, its per-pair rows balanced: the uniform matrix
          plan_.wait(plan_.issue(collectives::alltoallv(), s.values, sizeof(float), *ep_, CallPlacement::kOutOfPlace));
          break;
      }
    }
  }
  const ModelPart& part_;
  std::size_t first_;
  StepPlan& plan_;
  SyncPlan& sync_;
  PlanContext ctx_;
  std::optional<PlanGroup> tp_, bn_, ep_;
  std::vector<LayerSums> sums_;  // per layer
};

// Trainer::trainStep's loss: the last stage's summed over the pipeline's stages, then its mean over the replicas
// (GradientSync::groupMean, whose group is every replica's, expert parallelism's too: expert_sync.cpp).
void planLossMean(const Mesh& mesh, StepPlan& plan) {
  if (mesh.size(GroupKind::kPp) > 1) plan.sum(1, planGroupOf(mesh, GroupKind::kPp));
  if (mesh.size(kReplicaAxes) > 1) plan.sum(1, planGroupOf(mesh, kReplicaAxes));
}

// Trainer::update: the gradient norm's sums over the ranks (the loss scaler's check first under float16), the
// optimizer (LAMB's whole-tensor sums in it), the sync's afterUpdate.
void planUpdate(const TrainOptions& o, const Mesh& mesh, const ModelPart& part, StepPlan& plan, SyncPlan& sync,
                const PartPlan& layers) {
  const std::optional<PlanGroup> pp =
      mesh.size(GroupKind::kPp) > 1 ? std::optional(planGroupOf(mesh, GroupKind::kPp)) : std::nullopt;
  const std::optional<PlanGroup>& tp = layers.tp();
  const std::optional<PlanGroup>& ep = layers.ep();
  // train_step.cpp's `global`, in its order.
  auto global = [&] {
    sync.globalSumOfSquares();  // the replicated tensors'
    sync.globalSumOfSquares();  // the sliced ones'
    if (tp) plan.sum(1, *tp);
    if (ep) {  // the experts', each expert-parallel rank holding its own
      sync.expertSumOfSquares();
      plan.sum(1, *ep);
    }
    if (pp) plan.sum(1, *pp);
  };
  if (o.precision == Precision::kFloat16) global();  // the overflow check (a step it skips is not planned)
  global();
  plan.optimizer(sync.updateElements());
  const LayoutOptions& l = mesh.layout();
  const bool pieces = l.replicas() > 1 && (l.zero > 0 || l.sync == SyncKind::kParameterServer);
  if (o.optimizer.kind == OptimizerKind::kLamb && (tp || pieces)) {  // lambPartSums
    std::size_t experts = 0;                                         // expert parallel: the experts' pairs over their own copies
    if (ep)
      for (const Param* p : part.params) experts += p->expert ? 1 : 0;
    if (pieces) plan.sum(2 * part.params.size(), planGroupOf(mesh, kReplicaAxes));  // the experts' places zero
    if (pieces && experts > 0 && mesh.size(kExpertReplicaAxes) > 1) plan.sum(2 * experts, planGroupOf(mesh, kExpertReplicaAxes));
    if (tp) plan.sum(2 * part.params.size(), *tp);
  }
  sync.afterUpdate();
}

// Trainer::forwardBackward: the micro-batches through the part (a pipeline stage's in its schedule's order).
void planForwardBackward(const TrainOptions& o, const Mesh& mesh, const PipelineCut* cut, StepPlan& plan, PartPlan& layers,
                         SyncPlan& sync) {
  const int M = static_cast<int>(o.microBatches);
  if (cut) {
    planPipelineStep(mesh, *cut, M, plan,
                     {.forward = [&](int micro) { layers.forward(micro, ComputePhase::kForward); },
                      .backward =
                          [&](int micro, bool recompute, bool last) {
                            if (recompute) layers.forward(micro, ComputePhase::kRecompute);
                            layers.backward(micro, last);
                          },
                      .afterBackward = [&](bool last) { sync.afterBackward(last); }});
    return;
  }
  for (int i = 0; i < M; ++i) {
    layers.forward(i, ComputePhase::kForward);
    layers.backward(i, i == M - 1);
    sync.afterBackward(i == M - 1);
  }
}

}  // namespace

std::optional<AsyncPsFacts> asyncPsFactsOf(const Mesh& mesh, const ModelPart& part) {
  const LayoutOptions& l = mesh.layout();
  if (mesh.size(kReplicaAxes) <= 1 || l.sync != SyncKind::kAsyncParameterServer) return std::nullopt;
  AsyncPsFacts f;
  f.workers = l.workers();
  f.dedicated = l.psServers > 0;
  f.servers = f.dedicated ? l.psServers : l.psShards;
  f.staleness = l.staleness;
  const int replica = mesh.replicaIndex();
  f.worker = replica < f.workers;
  if (f.dedicated ? !f.worker : replica < f.servers) f.shard = f.dedicated ? replica - f.workers : replica;
  const Buckets buckets(part.params, l.bucketMb, f.servers);  // AsyncPsSync's shards: chunk k of every bucket
  for (const Bucket& b : buckets.all()) {
    f.shardBytes += b.chunk * sizeof(float);
    if (f.shard >= 0) f.shardElements += coveredBy(b, f.shard);
  }
  return f;
}

namespace {

// ps-async's rank step (asyncPsFactsOf): a worker's micro-batches through the model with nothing to communicate
// (its sends overlap the steps, and its waits for versions are the steady state's, not a schedule's), then the update
// of the shard it serves (none: no elements); a dedicated server the update alone.
StepPlan planAsyncPsStep(const TrainOptions& o, const Mesh& mesh, const ModelPart& part, std::size_t firstLayer,
                         const AsyncPsFacts& f) {
  StepPlan plan;
  plan.beginStep();
  const std::unique_ptr<SyncPlan> none = makeLocalPlan(part);
  if (f.worker) {
    PartPlan layers(part, firstLayer, mesh, plan, *none);
    planForwardBackward(o, mesh, nullptr, plan, layers, *none);
  }
  plan.optimizer(f.shardElements);  // a worker that serves nothing updates nothing (its optimizer phase is empty)
  return plan;
}

}  // namespace

StepPlan planTrainStep(const TrainOptions& o, const Mesh& mesh, const ModelPart& part, std::size_t firstLayer,
                       const PipelineCut* cut) {
  if (const std::optional<AsyncPsFacts> ps = asyncPsFactsOf(mesh, part)) return planAsyncPsStep(o, mesh, part, firstLayer, *ps);
  StepPlan plan;
  const std::unique_ptr<SyncPlan> sync = makeSyncPlan(mesh, part, o.optimizer.kind, plan);
  PartPlan layers(part, firstLayer, mesh, plan, *sync);
  for (int step = 0; step < sync->windowSteps(); ++step) {
    plan.beginStep();
    planForwardBackward(o, mesh, cut, plan, layers, *sync);
    planLossMean(mesh, plan);
    planUpdate(o, mesh, part, plan, *sync, layers);
  }
  return plan;
}

}  // namespace ts::wl
