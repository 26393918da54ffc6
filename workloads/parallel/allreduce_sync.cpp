#include "workloads/parallel/allreduce_sync.h"

#include "comm/collectives/collective.h"
#include "workloads/device_ops.h"
#include "workloads/parallel/bucket_plan.h"

namespace ts::wl {

AllReduceSync::AllReduceSync(Communicator& dp, const ModelPart& model, const LayoutOptions& layout, double timeoutS)
    : GradientSync(model.params, dp, timeoutS),
      params_(model.params),
      buckets_(params_, layout.bucketMb, 1),
      overlap_(layout.overlap) {
  // The gradients are the buckets: the backward accumulates straight into what is all-reduced.
  buckets_.releaseParamGrads(*model.arena);
  buckets_.takeAll(*model.arena);
}

void AllReduceSync::launch(Bucket& b) {
  b.flat.device->synchronize();  // the communicator's stream must see the gradients
  tracker_->start({&collectives::all_reduce(), b.flat.data, b.flat.data, b.elements, DType::kFloat32, RedOp::kSum});
  b.launched = true;
}

void AllReduceSync::beforeBackward(StepContext& ctx, bool last) {
  buckets_.startMicroBatch();
  ctx.gradReady = nullptr;
  if (!last || !overlap_) return;
  ctx.gradReady = [this](Param& p) {
    if (Bucket* b = buckets_.deposit(p)) launch(*b);
    tracker_->poll();
  };
}

void AllReduceSync::afterBackward(bool last) {
  if (!last) return;
  for (Bucket& b : buckets_.all())
    if (!b.launched) {
      buckets_.depositRest(b);
      launch(b);
    }
  tracker_->waitAll();  // in place: the parameters' gradients are the group's sum now
}

namespace {

class AllReducePlan final : public BucketsPlan {
 public:
  AllReducePlan(const ModelPart& part, const LayoutOptions& layout, StepPlan& plan, PlanGroup dp)
      : BucketsPlan(part, layout, 1, plan, std::move(dp)), elements_(elementsOf(part.params)) {}
  void beforeBackward(PlanContext& ctx, bool last) override { launchAsReady(ctx, last); }
  void afterBackward(bool last) override {
    if (!last) return;
    launchRest();
    plan_.waitAll(dp_);
  }
  std::uint64_t updateElements() const override { return elements_; }

 private:
  void launch(std::size_t b) override {
    plan_.issue(collectives::all_reduce(), bucket(b).elements, sizeof(float), dp_, CallPlacement::kInPlace);
  }
  std::uint64_t elements_;
};

}  // namespace

std::unique_ptr<SyncPlan> allReduceSyncPlan(const ModelPart& part, const LayoutOptions& layout, StepPlan& plan, PlanGroup dp) {
  return std::make_unique<AllReducePlan>(part, layout, plan, std::move(dp));
}

}  // namespace ts::wl
