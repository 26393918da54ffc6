#pragma once
// Data parallel by all-reduce (--zero 0): each bucket is all-reduced, in place, the moment its last
// gradient is ready during the final micro-batch's backward (--overlap on), or all after the backward
// (off). The inner micro-batches of gradient accumulation communicate nothing. Every rank then holds
// the averaged gradients and makes the same update.
#include "workloads/parallel/buckets.h"
#include "workloads/parallel/gradient_sync.h"

namespace ts::wl {

class AllReduceSync final : public GradientSync {
 public:
  AllReduceSync(Communicator& dp, const ModelPart& model, const LayoutOptions& layout, double timeoutS);
  void beforeBackward(StepContext& ctx, bool last) override;
  void afterBackward(bool last) override;
  std::vector<Param*> updateParams() override { return params_; }
  double globalSumOfSquares(double local) override { return local; }
  void afterUpdate() override {}

 private:
  void launch(Bucket& b);
  std::vector<Param*> params_;
  Buckets buckets_;
  bool overlap_;
};

// Its plan (SyncPlan): the same buckets, all-reduced as the final micro-batch's backward completes them.
std::unique_ptr<SyncPlan> allReduceSyncPlan(const ModelPart& part, const LayoutOptions& layout, StepPlan& plan, PlanGroup dp);

}  // namespace ts::wl
