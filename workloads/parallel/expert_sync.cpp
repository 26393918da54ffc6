#include "workloads/parallel/expert_sync.h"

#include <algorithm>
#include <array>
#include <functional>
#include <iterator>
#include <type_traits>
#include <utility>

#include "workloads/layers/param_init.h"

namespace ts::wl {
namespace {

// One group's sync over `part` as the layout's (syncOver), or none where the group is one rank (then the gradients
// are already the group's: materialised here, as a group of one keeps them in the parameters).
std::unique_ptr<GradientSync> syncOrLocal(Communicator* group, const ModelPart& part, const LayoutOptions& layout,
                                          double timeoutS, ProcessGroupId id) {
  if (!group) {
    materialize(part.params, *part.arena, ParamParts::kValuesAndGradients);
    return makeLocalSync(part);
  }
  return syncOver(*group, id, part, layout, timeoutS);
}

// One hook calling two (either may be unset; unset when both are): the first's first.
template <class Hook>
Hook chain(Hook a, Hook b) {
  if (!a || !b) return a ? a : b;
  return [a = std::move(a), b = std::move(b)](auto&&... at) {
    a(at...);
    b(at...);
  };
}

// A parameter's readiness goes to its own kind's sync.
std::function<void(Param&)> byKind(std::function<void(Param&)> dense, std::function<void(Param&)> experts) {
  if (!dense && !experts) return nullptr;
  return [dense = std::move(dense), experts = std::move(experts)](Param& p) {
    if (const auto& ready = p.expert ? experts : dense) ready(p);
  };
}

// Lets the two groups' syncs (or plans) set their hooks on ctx (a StepContext or a PlanContext) in turn, each on a
// context cleared of hooks, and leaves hooks that call both's: around a layer the dense group's first (every rank
// issues the two groups' collectives in one order; ZeRO-3 gathers a layer's dense parameters, then its experts), the
// readiness hook (member `ready`) as `join` makes it from the two.
template <class Context, class ReadyHook, class Sync, class Set, class Join>
void hookBoth(Context& ctx, ReadyHook Context::*ready, Sync& dense, Sync& experts, Set set, Join join) {
  const std::array layer{&Context::beforeForward, &Context::afterForward, &Context::beforeBackward, &Context::afterBackward};
  using LayerHook = std::remove_reference_t<decltype(ctx.beforeForward)>;
  std::array<std::array<LayerHook, 4>, 2> around;
  std::array<ReadyHook, 2> readiness;
  for (std::size_t k = 0; k < 2; ++k) {
    for (auto hook : layer) ctx.*hook = nullptr;
    ctx.*ready = nullptr;
    set(k == 0 ? dense : experts);
    for (std::size_t h = 0; h < layer.size(); ++h) around[k][h] = std::exchange(ctx.*layer[h], nullptr);
    readiness[k] = std::exchange(ctx.*ready, nullptr);
  }
  for (std::size_t h = 0; h < layer.size(); ++h) ctx.*layer[h] = chain(std::move(around[0][h]), std::move(around[1][h]));
  ctx.*ready = join(std::move(readiness[0]), std::move(readiness[1]));
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
      dense_(syncOrLocal(mesh.replicaGroup(), expertsOrDense(part, false), mesh.layout(), timeoutS, mesh.groupId(kReplicaAxes))),
      experts_(syncOrLocal(mesh.group(kExpertReplicaAxes), expertsOrDense(part, true), mesh.layout(), timeoutS,
                           mesh.groupId(kExpertReplicaAxes))) {
  setGroup(mesh.groupId(kReplicaAxes));  // the loss's mean (groupMean) is over every replica
}

void ExpertParallelSync::beforeForward(StepContext& ctx) {
  hookBoth(
      ctx, &StepContext::gradReady, *dense_, *experts_, [&](GradientSync& sync) { sync.beforeForward(ctx); }, byKind);
}

void ExpertParallelSync::afterForwardOnly() {
  dense_->afterForwardOnly();
  experts_->afterForwardOnly();
}

void ExpertParallelSync::beforeBackward(StepContext& ctx, bool last) {
  hookBoth(
      ctx, &StepContext::gradReady, *dense_, *experts_, [&](GradientSync& sync) { sync.beforeBackward(ctx, last); }, byKind);
}

void ExpertParallelSync::afterBackward(bool last) {
  dense_->afterBackward(last);
  experts_->afterBackward(last);
}

std::vector<Param*> ExpertParallelSync::keptParams() {
  std::vector<Param*> out = dense_->keptParams();
  const std::vector<Param*> experts = experts_->keptParams();
  out.insert(out.end(), experts.begin(), experts.end());
  return out;
}

void ExpertParallelSync::visitParameters(const std::function<void(Param&)>& visit) {
  dense_->visitParameters(visit);
  experts_->visitParameters(visit);
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
  ExpertParallelPlan(const Mesh& mesh, const ModelPart& part, OptimizerKind optimizer, StepPlan& plan)
      : dense_(planOver(mesh, kReplicaAxes, expertsOrDense(part, false), optimizer, plan)),
        experts_(planOver(mesh, kExpertReplicaAxes, expertsOrDense(part, true), optimizer, plan)) {}
  void beforeForward(PlanContext& ctx) override {
    hookBoth(
        ctx, &PlanContext::gradsReady, *dense_, *experts_, [&](SyncPlan& sync) { sync.beforeForward(ctx); }, chainOf);
  }
  void beforeBackward(PlanContext& ctx, bool last) override {
    // As ExpertParallelSync's: each group's hooks called together.
    hookBoth(
        ctx, &PlanContext::gradsReady, *dense_, *experts_, [&](SyncPlan& sync) { sync.beforeBackward(ctx, last); }, chainOf);
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
  static std::function<void(std::size_t)> chainOf(std::function<void(std::size_t)> a, std::function<void(std::size_t)> b) {
    return chain(std::move(a), std::move(b));
  }
  static std::unique_ptr<SyncPlan> planOver(const Mesh& mesh, AxisSet set, const ModelPart& part, OptimizerKind optimizer,
                                            StepPlan& plan) {
    if (mesh.size(set) == 1) return makeLocalPlan(part);
    return syncPlanOver(planGroupOf(mesh, set), mesh.coordinate(set), part, mesh.layout(), optimizer, plan);
  }
  std::unique_ptr<SyncPlan> dense_, experts_;
};

}  // namespace

std::unique_ptr<SyncPlan> expertParallelSyncPlan(const Mesh& mesh, const ModelPart& part, OptimizerKind optimizer,
                                                 StepPlan& plan) {
  return std::make_unique<ExpertParallelPlan>(mesh, part, optimizer, plan);
}

}  // namespace ts::wl
