#include "workloads/parallel/expert_sync.h"

#include <algorithm>
#include <functional>
#include <iterator>

#include "workloads/layers/param_init.h"
#include "workloads/parallel/allreduce_sync.h"

namespace ts::wl {
namespace {

// One group's all-reduce sync over `part`, or none where the group is one rank (then the gradients are already the
// group's: materialised here, as a group of one keeps them in the parameters, not in buckets).
std::unique_ptr<GradientSync> allReduceOver(Communicator* group, const ModelPart& part, const LayoutOptions& layout,
                                            double timeoutS, ProcessGroupId id) {
  if (!group) {
    materialize(part.params, *part.arena, ParamParts::kValuesAndGradients);
    return makeLocalSync(part);
  }
  auto sync = std::make_unique<AllReduceSync>(*group, part, layout, timeoutS);
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
      dense_(
          allReduceOver(mesh.replicaGroup(), expertsOrDense(part, false), mesh.layout(), timeoutS, mesh.groupId(kReplicaAxes))),
      experts_(allReduceOver(mesh.group(kExpertReplicaAxes), expertsOrDense(part, true), mesh.layout(), timeoutS,
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
  dense_->beforeBackward(ctx, last);
  std::function<void(Param&)> dense = std::move(ctx.gradReady);
  experts_->beforeBackward(ctx, last);
  std::function<void(Param&)> experts = std::move(ctx.gradReady);
  ctx.gradReady = nullptr;
  if (!dense && !experts) return;
  ctx.gradReady = [dense = std::move(dense), experts = std::move(experts)](Param& p) {
    if (const auto& ready = p.expert ? experts : dense) ready(p);
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
  for (StepComm s : {dense_->takeStepComm(), experts_->takeStepComm()}) {
    out.communicationS += s.communicationS;
    out.exposedS += s.exposedS;
    out.collectives.insert(out.collectives.end(), s.collectives.begin(), s.collectives.end());
  }
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
    dense_->beforeBackward(ctx, last);
    std::function<void(std::size_t)> dense = std::move(ctx.gradsReady);
    experts_->beforeBackward(ctx, last);
    std::function<void(std::size_t)> experts = std::move(ctx.gradsReady);
    ctx.gradsReady = nullptr;
    if (!dense && !experts) return;
    ctx.gradsReady = [dense = std::move(dense), experts = std::move(experts)](std::size_t layer) {
      if (dense) dense(layer);
      if (experts) experts(layer);
    };
  }
  void afterBackward(bool last) override {
    dense_->afterBackward(last);
    experts_->afterBackward(last);
  }
  std::uint64_t updateElements() const override { return dense_->updateElements() + experts_->updateElements(); }

 private:
  static std::unique_ptr<SyncPlan> planOver(const Mesh& mesh, AxisSet set, const ModelPart& part, StepPlan& plan) {
    if (mesh.size(set) == 1) return makeLocalPlan(part);
    return allReduceSyncPlan(part, mesh.layout(), plan, planGroupOf(mesh, set));
  }
  std::unique_ptr<SyncPlan> dense_, experts_;
};

}  // namespace

std::unique_ptr<SyncPlan> expertParallelSyncPlan(const Mesh& mesh, const ModelPart& part, StepPlan& plan) {
  return std::make_unique<ExpertParallelPlan>(mesh, part, plan);
}

}  // namespace ts::wl
