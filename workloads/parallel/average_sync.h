#pragma once
// Model averaging, or local SGD (--sync average --average-every K): each data-parallel rank steps its own
// optimizer on its own gradients (nothing is communicated during the backward; each rank's loss is its own
// batch's mean), and after every K-th update the parameters (with --average-optimizer, the optimizer state
// too) are averaged over the group: one in-place all-reduce per tensor, then a scaling by 1/dp. K = 1 with
// SGD is synchronous data parallel to float rounding, momentum and coupled weight decay included (the
// replicas' momentum buffers average to the synchronous one, both being linear in the gradients); larger K
// communicates K times less and lets the replicas drift between averagings, which costs convergence.
// Between averagings the replicas differ: a checkpoint keeps every rank's own copies of what differs (so a
// resume on the same layout continues each replica exactly), an evaluation averages the ranks' figures on
// their own replicas.
#include <cstdint>
#include <vector>

#include "workloads/optim/optimizer.h"
#include "workloads/parallel/gradient_sync.h"

namespace ts::wl {

// Whether the group averages after its `update`-th update (1-based): every --average-every-th.
inline bool averagesAfter(std::int64_t update, int every) { return update % every == 0; }

class AverageSync final : public GradientSync {
 public:
  AverageSync(Communicator& dp, const ModelPart& model, const LayoutOptions& layout, double timeoutS);
  void beforeBackward(StepContext& ctx, bool) override { ctx.gradReady = nullptr; }
  void afterBackward(bool) override {}
  std::vector<Param*> updateParams() override { return params_; }
  // Each rank clips its own gradient (it steps on it alone).
  double globalSumOfSquares(double local) override { return local; }
  void afterUpdate() override;
  // The optimizer's tensors, averaged with the parameters (--average-optimizer).
  void alsoAverage(std::vector<Tensor*> tensors) { extra_ = std::move(tensors); }
  // The step the next update makes is `step` (a resumed run keeps the cadence of the one it continues).
  void continueAt(std::int64_t step) { updates_ = step; }
  // The parameters differ unless the last update was averaged; the optimizer state too unless it was averaged
  // with them; the buffers (batch norm's running statistics) are never averaged.
  Divergence divergence() const override;

 private:
  void average(const Tensor& t);
  std::vector<Param*> params_;
  int every_;
  std::int64_t updates_ = 0;
  std::vector<Tensor*> extra_;
};

// Its plan (SyncPlan): a window of --average-every steps (the steps differ: only the last of them averages), the
// averaging after the last update, of the parameters and (--average-optimizer) the state an optimizer of
// `optimizer`'s kind keeps for them (makeOptimizer's alsoAverage).
std::unique_ptr<SyncPlan> averageSyncPlan(const ModelPart& part, const LayoutOptions& layout, OptimizerKind optimizer,
                                          StepPlan& plan, PlanGroup dp);

}  // namespace ts::wl
