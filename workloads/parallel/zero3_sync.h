#pragma once
// ZeRO stage 3 / fully sharded data parallel (--zero 3): every rank keeps only its chunk of each layer's
// parameters (and their gradients and optimizer state). A layer's parameters are all-gathered into a
// buffer taken just before it runs, forward and again backward, its parameters made views of it, and
// the buffer given back after; its gradients are written into a buffer taken for its backward,
// reduce-scattered in place as soon as that is done, added into the owner's chunk (accumulating across
// micro-batches), and the buffer given back. The parameters used outside the layers (the transformer's
// embeddings) are one more group, gathered for the step. The update touches only the shards; there is
// nothing to send back afterwards.
//
// Prefetch (--prefetch K, as FSDP's and DeepSpeed's): while a layer computes, the all-gathers of the next K
// layers of the pass (forward: the ones after it; backward: the ones before) are in flight, so that a
// layer's gather is waited for only when the compute before it was shorter; 0 gathers each layer when it
// runs. The last layer stays gathered from its forward to its backward, which comes next.
//
// Memory per rank: 1/N of the parameters, gradients and optimizer state, plus the layers in use: the one
// running (values and gradients), the K being gathered ahead, and the one whose gradients are still being
// sent. The model comes deferred (param_init.h): the constructor draws this rank's chunk of each group's
// initial weights alone, with the values the whole model would have there, so no rank ever holds the whole
// model.
#include <unordered_map>

#include "workloads/parallel/buckets.h"
#include "workloads/parallel/gradient_sync.h"
#include "workloads/parallel/zero3_order.h"

namespace ts::wl {

// Its groups of a part, each one bucket of `parts` chunks however large (the layout alone: no flat): the leading
// parameters' first when there are any, then each layer's that has parameters.
struct Zero3Groups {
  std::vector<std::unique_ptr<Buckets>> layouts;
  std::vector<std::size_t> ofLayer;  // per layer of the part: its group, SIZE_MAX for none
  bool leading = false;
};
Zero3Groups zero3GroupsOf(const ModelPart& part, int parts);

// The order of its ops is Zero3Order's (shared with its plan); this class is the executor: buffers, views, the tracker.
class Zero3Sync final : public GradientSync, private Zero3Order {
 public:
  Zero3Sync(Communicator& dp, const ModelPart& model, const LayoutOptions& layout, double timeoutS);
  void beforeForward(StepContext& ctx) override;
  void afterForwardOnly() override;
  void beforeBackward(StepContext& ctx, bool last) override;
  void afterBackward(bool last) override;
  std::vector<Param*> updateParams() override { return pointersTo(pieces_); }
  double globalSumOfSquares(double local) override { return groupSum(local, true); }
  void afterUpdate() override {}
  std::vector<Param*> keptParams() override { return updateParams(); }
  void visitParameters(const std::function<void(Param&)>& visit) override;

 private:
  struct Group {
    std::unique_ptr<Buckets> buckets;  // one bucket: the group's parameters (its layout; no flat of its own)
    Tensor values, grads;              // this rank's chunk, for the run
    Tensor gathered, sending;          // the gathered values and the gradients being written or sent (no data when not)
    int op = -1;                       // the reduce-scatter in flight on `sending`
    int gatherOp = -1;                 // the all-gather in flight into `gathered` (a prefetch not yet waited for)
  };
  Zero3Sync(Communicator& dp, const ModelPart& model, const LayoutOptions& layout, double timeoutS, Zero3Groups groups);
  Bucket& bucketOf(std::size_t g) { return groups_[g].buckets->all().front(); }
  // Zero3Order's executor.
  void issueGather(std::size_t g) override;
  void waitGather(std::size_t g) override;
  void dropGathered(std::size_t g) override;
  void takeGradientBuffer(std::size_t g) override;
  void issueGradients(std::size_t g) override;
  void retireGradients(std::size_t g) override;  // waits for g's gradients, adds them into its chunk, gives the buffer back
  void waitAll() override;
  void poll() override;
  void microBatchEnds(bool last) override { firstMicro_ = last; }
  void hook(StepContext& ctx);
  Arena& arena_;
  int rank_;
  std::vector<Group> groups_;
  std::unordered_map<const Layer*, std::size_t> groupOf_;
  std::vector<Param> pieces_;
  bool firstMicro_ = true;
};

// Its plan (SyncPlan): the same groups, gathers, prefetches and reduce-scatters (zero3_sync_plan.cpp).
std::unique_ptr<SyncPlan> zero3SyncPlan(const ModelPart& part, const LayoutOptions& layout, int replica, StepPlan& plan,
                                        PlanGroup dp);

}  // namespace ts::wl
