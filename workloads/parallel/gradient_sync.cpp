#include "workloads/parallel/gradient_sync.h"

#include "workloads/models/model.h"
#include "workloads/parallel/allreduce_sync.h"
#include "workloads/parallel/average_sync.h"
#include "workloads/parallel/expert_sync.h"
#include "workloads/parallel/sharded_sync.h"
#include "workloads/parallel/zero3_sync.h"

namespace ts::wl {

GradientSync::GradientSync(std::vector<Param*> modelParams, Communicator& group, double timeoutS)
    : modelParams_(std::move(modelParams)),
      group_(&group),
      tracker_(std::make_unique<CommTracker>(group, timeoutS, ProcessGroupId{kReplicaAxes, 0})) {}  // setGroup says which

double GradientSync::groupSum(double v, bool timed) { return group_ ? tracker_->sum(v, timed) : v; }

std::vector<Param*> GradientSync::pointersTo(std::vector<Param>& pieces) {
  std::vector<Param*> out;
  for (Param& p : pieces) out.push_back(&p);
  return out;
}

std::size_t GradientSync::ownedParameterElements() {
  std::size_t n = 0;
  for (const Param* p : updateParams()) n += p->value.numel();
  return n;
}

void GradientSync::sumOverGroup(std::span<double> v) {
  if (group_) tracker_->sum(v, true);
}

double GradientSync::groupMean(double v, bool timed) { return group_ ? groupSum(v, timed) / group_->worldSize() : v; }

namespace {

// One data-parallel rank: the gradients are already the group's.
class LocalSync final : public GradientSync {
 public:
  explicit LocalSync(const ModelPart& part) : GradientSync(part.params), params_(part.params) {}
  void beforeBackward(StepContext& ctx, bool) override { ctx.gradReady = nullptr; }
  void afterBackward(bool) override {}
  std::vector<Param*> updateParams() override { return params_; }
  double globalSumOfSquares(double local) override { return local; }
  void afterUpdate() override {}

 private:
  std::vector<Param*> params_;
};

// Its plan: nothing to communicate.
class LocalPlan final : public SyncPlan {
 public:
  explicit LocalPlan(const ModelPart& part) : elements_(elementsOf(part.params)) {}
  std::uint64_t updateElements() const override { return elements_; }

 private:
  std::uint64_t elements_;
};

}  // namespace

void SyncPlan::beforeBackward(PlanContext& ctx, bool) { ctx.gradsReady = nullptr; }

std::unique_ptr<GradientSync> makeLocalSync(const ModelPart& part) { return std::make_unique<LocalSync>(part); }

std::unique_ptr<SyncPlan> makeLocalPlan(const ModelPart& part) { return std::make_unique<LocalPlan>(part); }

std::unique_ptr<SyncPlan> syncPlanOver(PlanGroup group, int replica, const ModelPart& part, const LayoutOptions& l,
                                       OptimizerKind optimizer, StepPlan& plan) {
  if (l.sync == SyncKind::kAverage) return averageSyncPlan(part, l, optimizer, plan, std::move(group));
  if (l.zero == 3) return zero3SyncPlan(part, l, replica, plan, std::move(group));
  if (l.sync == SyncKind::kParameterServer || l.zero > 0) return shardedSyncPlan(part, l, replica, plan, std::move(group));
  return allReduceSyncPlan(part, l, plan, std::move(group));
}

std::unique_ptr<SyncPlan> makeSyncPlan(const Mesh& mesh, const ModelPart& part, OptimizerKind optimizer, StepPlan& plan) {
  if (mesh.size(kReplicaAxes) == 1) return std::make_unique<LocalPlan>(part);
  if (mesh.size(kExpertAxes) > 1) return expertParallelSyncPlan(mesh, part, optimizer, plan);
  return syncPlanOver(planGroupOf(mesh, kReplicaAxes), mesh.replicaIndex(), part, mesh.layout(), optimizer, plan);
}

std::uint64_t elementsOf(const std::vector<Param*>& params) {
  std::uint64_t n = 0;
  for (const Param* p : params) n += static_cast<std::uint64_t>(p->value.numel());
  return n;
}

ModelPart wholeModel(Model& model) { return {model.params(), model.layers(), model.leadingParams(), &model.arena()}; }

ParamParts paramPartsForSync(const Mesh& mesh) {
  const LayoutOptions& l = mesh.layout();
  if (!mesh.replicaGroup() || l.sync == SyncKind::kAverage) return ParamParts::kValuesAndGradients;
  if (l.zero > 0 || l.sync == SyncKind::kParameterServer || l.sync == SyncKind::kAsyncParameterServer) return ParamParts::kNone;
  return ParamParts::kValues;
}

std::unique_ptr<GradientSync> makeGradientSync(const Mesh& mesh, const ModelPart& model, double timeoutS) {
  Communicator* dp = mesh.replicaGroup();
  if (!dp) return std::make_unique<LocalSync>(model);
  const LayoutOptions& l = mesh.layout();
  if (mesh.size(kExpertAxes) > 1) return std::make_unique<ExpertParallelSync>(mesh, model, timeoutS);
  return syncOver(*dp, mesh.groupId(kReplicaAxes), model, l, timeoutS);
}

std::unique_ptr<GradientSync> syncOver(Communicator& group, ProcessGroupId id, const ModelPart& part, const LayoutOptions& l,
                                       double timeoutS) {
  std::unique_ptr<GradientSync> sync;
  if (l.sync == SyncKind::kAverage)
    sync = std::make_unique<AverageSync>(group, part, l, timeoutS);
  else if (l.zero == 3)
    sync = std::make_unique<Zero3Sync>(group, part, l, timeoutS);
  else if (l.sync == SyncKind::kParameterServer || l.zero > 0)
    sync = std::make_unique<ShardedSync>(group, part, l, timeoutS);
  else
    sync = std::make_unique<AllReduceSync>(group, part, l, timeoutS);
  sync->setGroup(id);
  return sync;
}

}  // namespace ts::wl
