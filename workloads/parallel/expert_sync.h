#pragma once
// Expert parallelism's gradient sync (--ep > 1): two groups, as Megatron's data-parallel and expert-data-parallel
// ones. The dense parameters are every replica's (kReplicaAxes: dp x ep), their gradients all-reduced over all of
// them; an expert is held by one expert-parallel rank and its copies are the replicas outside the expert axes
// (kExpertReplicaAxes: dp), over which alone its gradient is summed. Each rank's backward is scaled by 1/(micro-batches
// x dp x ep) as every layout's is, and an expert's gradient already sums the rows every expert-parallel rank routed to
// it (their all-to-alls brought them), so its sum over dp is the single-device gradient of the global batch.
// Each group's sync is the layout's own over its part of the parameters: all-reduce (allreduce_sync.h), ZeRO-1/2's
// shards (sharded_sync.h) or ZeRO-3's (zero3_sync.h), the dense ones' over dp x ep and an expert's over its dp copies
// (Megatron's distributed optimizer shards an expert's state over its expert-data-parallel group alike, as
// DeepSpeed's ZeRO-3 with MoE does the experts' parameters). Under ZeRO-3 a mixture's layer is gathered twice
// around its run: its dense parameters (the router) over dp x ep, its experts over dp.
#include <memory>

#include "workloads/parallel/gradient_sync.h"

namespace ts::wl {

class ExpertParallelSync final : public GradientSync {
 public:
  ExpertParallelSync(const Mesh& mesh, const ModelPart& part, double timeoutS);
  void beforeForward(StepContext& ctx) override;
  void afterForwardOnly() override;
  void beforeBackward(StepContext& ctx, bool last) override;
  void afterBackward(bool last) override;
  std::vector<Param*> updateParams() override;
  // Each group's (ZeRO-3's shards, or the parameters); visited a group at a time, the dense parameters first.
  std::vector<Param*> keptParams() override;
  void visitParameters(const std::function<void(Param&)>& visit) override;
  // Each group's own (the trainer adds the experts' over the expert-parallel group, whose ranks hold different ones).
  double globalSumOfSquares(double local) override { return dense_->globalSumOfSquares(local); }
  double expertSumOfSquares(double local) override { return experts_->globalSumOfSquares(local); }
  void afterUpdate() override;
  void sumOverExpertGroup(std::span<double> v) override { experts_->sumOverGroup(v); }
  StepComm takeStepComm() override;

 private:
  std::unique_ptr<GradientSync> dense_, experts_;
};

// Its plan: the two groups' plans, each the layout's.
std::unique_ptr<SyncPlan> expertParallelSyncPlan(const Mesh& mesh, const ModelPart& part, OptimizerKind optimizer,
                                                 StepPlan& plan);

// The part's dense parameters (expert: false) or its experts' (true), the rest of the part as it is.
ModelPart expertsOrDense(const ModelPart& part, bool experts);

}  // namespace ts::wl
