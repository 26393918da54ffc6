#include "workloads/parallel/expert_sync.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <utility>

#include "workloads/layers/param_init.h"
#include "workloads/parallel/allreduce_sync.h"
#include "workloads/parallel/sharded_sync.h"

namespace ts::wl {
namespace {

// One group's sync over `part` as the layout's (ZeRO-1/2's shards, or all-reduce), or none where the group is one rank
// (then the gradients are already the group's: materialised here, as a group of one keeps them in the parameters).
std::unique_ptr<GradientSync> syncOver(Communicator* group, const ModelPart& part, const LayoutOptions& layout, double timeoutS,
                                       ProcessGroupId id) {
  if (!group) {
    materialize(part.params, *part.arena, ParamParts::kValuesAndGradients);
    return makeLocalSync(part);
  }
  std::unique_ptr<GradientSync> sync;
  if (layout.zero > 0)
    sync = std::make_unique<ShardedSync>(*group, part, layout, timeoutS);
  else
    sync = std::make_unique<AllReduceSync>(*group, part, layout, timeoutS);
  sync->setGroup(id);
  return sync;
}

}  // namespace

ModelPart expertsOrDense(const ModelPart& part, bool experts) {
  ModelPart out = part;
  out.params.clear();
  std::copy_if(part.params.begin(), part.params.end(), std::back_inserter(out.params),
               [&](const Param* p) { return p->expert == experts; });
  out.leading.clear();
  std::copy_if(part.leading.begin(), part.leading.end(), std::back_inserter(out.leading),
               [&](const Param* p) { return p->expert == experts; });
  return out;
}

ExpertParallelSync::ExpertParallelSync(const Mesh& mesh, const ModelPart& part, double timeoutS)
    : GradientSync(part.params, *mesh.replicaGroup(), timeoutS),
      dense_(syncOver(mesh.replicaGroup(), expertsOrDense(part, false), mesh.layout(), timeoutS, mesh.groupId(kReplicaAxes))),
      experts_(syncOver(mesh.group(kExpertReplicaAxes), expertsOrDense(part, true), mesh.layout(), timeoutS,
                        mesh.groupId(kExpertReplicaAxes))) {
  setGroup(mesh.groupId(kReplicaAxes));  // the loss's mean (groupMean) is over every replica
}

void ExpertParallelSync::beforeForward(StepContext& ctx) {
  dense_->beforeForward(ctx);
  experts_->beforeForward(ctx);
}

void ExpertParallelSync::afterForwardOnly() {
  dense_->afterForwardOnly();
  experts_->afterForwardOnly();
}

void ExpertParallelSync::beforeBackward(StepContext& ctx, bool last) {
  // Each group's hooks (a parameter's readiness, ZeRO-2's buckets taken before a layer's backward), called together.
  dense_->beforeBackward(ctx, last);
  std::function<void(Param&)> dense = std::move(ctx.gradReady);
  std::function<void(Layer&)> denseLayer = std::move(ctx.beforeBackward);
  ctx.gradReady = nullptr;
  ctx.beforeBackward = nullptr;
  experts_->beforeBackward(ctx, last);
  std::function<void(Param&)> experts = std::move(ctx.gradReady);
  std::function<void(Layer&)> expertsLayer = std::move(ctx.beforeBackward);
  ctx.gradReady = nullptr;
  ctx.beforeBackward = nullptr;
  if (dense || experts)
    ctx.gradReady = [dense = std::move(dense), experts = std::move(experts)](Param& p) {
      if (const auto& ready = p.expert ? experts : dense) ready(p);
    };
  if (denseLayer || expertsLayer)
    ctx.beforeBackward = [dense = std::move(denseLayer), experts = std::move(expertsLayer)](Layer& l) {
      if (dense) dense(l);
      if (experts) experts(l);
    };
}

void ExpertParallelSync::afterBackward(bool last) {
  dense_->afterBackward(last);
  experts_->afterBackward(last);
}

std::vector<Param*> ExpertParallelSync::updateParams() {
  std::vector<Param*> out = dense_->updateParams();
  const std::vector<Param*> experts = experts_->updateParams();
  out.insert(out.end(), experts.begin(), experts.end());
  return out;
}

void ExpertParallelSync::afterUpdate() {
  dense_->afterUpdate();
  experts_->afterUpdate();
}

StepComm ExpertParallelSync::takeStepComm() {
  StepComm out = GradientSync::takeStepComm();
  out.add(dense_->takeStepComm());
  out.add(experts_->takeStepComm());
  return out;
}

namespace {

class ExpertParallelPlan final : public SyncPlan {
 public:
  ExpertParallelPlan(const Mesh& mesh, const ModelPart& part, StepPlan& plan)
      : dense_(planOver(mesh, kReplicaAxes, expertsOrDense(part, false), plan)),
        experts_(planOver(mesh, kExpertReplicaAxes, expertsOrDense(part, true), plan)) {}
  void beforeForward(PlanContext& ctx) override {
    dense_->beforeForward(ctx);
    experts_->beforeForward(ctx);
  }
  void beforeBackward(PlanContext& ctx, bool last) override {
    // As ExpertParallelSync::beforeBackward: each group's hooks called together.
    dense_->beforeBackward(ctx, last);
    auto dense = std::exchange(ctx.gradsReady, nullptr);
    auto denseLayer = std::exchange(ctx.beforeBackward, nullptr);
    experts_->beforeBackward(ctx, last);
    auto experts = std::exchange(ctx.gradsReady, nullptr);
    auto expertsLayer = std::exchange(ctx.beforeBackward, nullptr);
    ctx.gradsReady = both(std::move(dense), std::move(experts));
    ctx.beforeBackward = both(std::move(denseLayer), std::move(expertsLayer));
  }
  void afterBackward(bool last) override {
    dense_->afterBackward(last);
    experts_->afterBackward(last);
  }
  void globalSumOfSquares() override { dense_->globalSumOfSquares(); }
  void expertSumOfSquares() override { experts_->globalSumOfSquares(); }
  void afterUpdate() override {
    dense_->afterUpdate();
    experts_->afterUpdate();
  }
  std::uint64_t updateElements() const override { return dense_->updateElements() + experts_->updateElements(); }

 private:
  // One hook calling two (either may be unset); unset when both are.
  static std::function<void(std::size_t)> both(std::function<void(std::size_t)> a, std::function<void(std::size_t)> b) {
    if (!a && !b) return nullptr;
    return [a = std::move(a), b = std::move(b)](std::size_t layer) {
      if (a) a(layer);
      if (b) b(layer);
    };
  }
  static std::unique_ptr<SyncPlan> planOver(const Mesh& mesh, AxisSet set, const ModelPart& part, StepPlan& plan) {
    if (mesh.size(set) == 1) return makeLocalPlan(part);
    if (mesh.layout().zero > 0) return shardedSyncPlan(part, mesh.layout(), mesh.coordinate(set), plan, planGroupOf(mesh, set));
    return allReduceSyncPlan(part, mesh.layout(), plan, planGroupOf(mesh, set));
  }
  std::unique_ptr<SyncPlan> dense_, experts_;
};

}  // namespace

std::unique_ptr<SyncPlan> expertParallelSyncPlan(const Mesh& mesh, const ModelPart& part, StepPlan& plan) {
  return std::make_unique<ExpertParallelPlan>(mesh, part, plan);
}

}  // namespace ts::wl
