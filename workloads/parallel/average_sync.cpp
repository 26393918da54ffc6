#include "workloads/parallel/average_sync.h"

#include "comm/collectives/collective.h"
#include "workloads/device_ops.h"

namespace ts::wl {

AverageSync::AverageSync(Communicator& dp, const ModelPart& model, const LayoutOptions& layout, double timeoutS)
    : GradientSync(model.params, dp, timeoutS), params_(model.params), every_(layout.averageEvery) {}

void AverageSync::average(const Tensor& t) {
  t.device->synchronize();  // the communicator's stream must see the values
  tracker_->start({&collectives::all_reduce(), t.data, t.data, t.numel(), DType::kFloat32, RedOp::kSum});
}

GradientSync::Divergence AverageSync::divergence() const {
  if (group_->worldSize() == 1) return {};
  const bool averaged = averagesAfter(updates_, every_);
  return {.params = !averaged, .optimizer = !(averaged && !extra_.empty()), .buffers = true};
}

void AverageSync::afterUpdate() {
  if (!averagesAfter(++updates_, every_)) return;
  // Every tensor's sum launched, then waited for together, then each scaled to the mean.
  for (Param* p : params_) average(p->value);
  for (Tensor* t : extra_) average(*t);
  tracker_->waitAll();
  const float inverse = 1.0f / static_cast<float>(group_->worldSize());
  for (Param* p : params_) ops::scale(*p->value.device, p->value.data, inverse, p->value.numel());
  for (Tensor* t : extra_) ops::scale(*t->device, t->data, inverse, t->numel());
}

namespace {

// afterUpdate's ops: every tensor's sum launched (the parameters', then the optimizer state's), then all waited for.
class AveragePlan final : public SyncPlan {
 public:
  AveragePlan(const ModelPart& part, int every, std::vector<std::size_t> extra, StepPlan& plan, PlanGroup dp)
      : params_(part.params), every_(every), extra_(std::move(extra)), plan_(plan), dp_(std::move(dp)) {}
  int windowSteps() const override { return every_; }
  void afterUpdate() override {
    if (!averagesAfter(++updates_, every_)) return;
    for (const Param* p : params_)
      plan_.issue(collectives::all_reduce(), p->value.numel(), sizeof(float), dp_, CallPlacement::kInPlace);
    for (std::size_t n : extra_) plan_.issue(collectives::all_reduce(), n, sizeof(float), dp_, CallPlacement::kInPlace);
    plan_.waitAll(dp_);
  }
  std::uint64_t updateElements() const override { return elementsOf(params_); }

 private:
  std::vector<Param*> params_;
  int every_;
  std::int64_t updates_ = 0;
  std::vector<std::size_t> extra_;  // the optimizer state's tensors (--average-optimizer)
  StepPlan& plan_;
  PlanGroup dp_;
};

}  // namespace

std::unique_ptr<SyncPlan> averageSyncPlan(const ModelPart& part, const LayoutOptions& layout, OptimizerKind optimizer,
                                          StepPlan& plan, PlanGroup dp) {
  std::vector<std::size_t> extra;
  if (layout.averageOptimizer) extra = optimizerStateElements(optimizer, part.params);
  return std::make_unique<AveragePlan>(part, layout.averageEvery, std::move(extra), plan, std::move(dp));
}

}  // namespace ts::wl
