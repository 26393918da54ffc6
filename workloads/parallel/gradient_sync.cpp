#include "workloads/parallel/gradient_sync.h"

#include "workloads/models/model.h"
#include "workloads/parallel/allreduce_sync.h"
#include "workloads/parallel/sharded_sync.h"
#include "workloads/parallel/zero3_sync.h"

namespace ts::wl {

GradientSync::GradientSync(std::vector<Param*> modelParams, Communicator& group, double timeoutS)
    : modelParams_(std::move(modelParams)), group_(&group), tracker_(std::make_unique<CommTracker>(group, timeoutS)), scalar_(group, 0, sizeof(double)) {}

double GradientSync::groupSum(double v, bool timed) {
  if (!group_) return v;
  group_->copyIn(0, scalar_.get(), &v, sizeof(double));
  const CollectiveCall call{CollectiveKind::kAllReduce, scalar_.get(), scalar_.get(), 1, DType::kFloat64, RedOp::kSum};
  if (timed) {
    tracker_->run(call);
  } else {
    CommTracker untimed(*group_, 0);
    untimed.run(call);
  }
  double sum = 0;
  group_->copyOut(0, &sum, scalar_.get(), sizeof(double));
  return sum;
}

double GradientSync::groupMean(double v) { return group_ ? groupSum(v, false) / group_->worldSize() : v; }

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
  std::size_t ownedParameterElements() override {
    std::size_t n = 0;
    for (Param* p : params_) n += p->value.numel();
    return n;
  }

 private:
  std::vector<Param*> params_;
};

}  // namespace

ModelPart wholeModel(Model& model) { return {model.params(), model.layers(), model.leadingParams(), &model.arena()}; }

std::unique_ptr<GradientSync> makeGradientSync(const ProcessGrid& grid, const ModelPart& model, double timeoutS) {
  Communicator* dp = grid.dp();
  if (!dp) return std::make_unique<LocalSync>(model);
  const LayoutOptions& l = grid.layout();
  if (l.zero == 3) return std::make_unique<Zero3Sync>(*dp, model, l, timeoutS);
  if (l.sync == "ps" || l.zero > 0) return std::make_unique<ShardedSync>(*dp, model, l, timeoutS);
  return std::make_unique<AllReduceSync>(*dp, model, l, timeoutS);
}

}  // namespace ts::wl
