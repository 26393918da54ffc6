#pragma once
// ZeRO stage 3 / fully sharded data parallel (--zero 3): every rank keeps only its chunk of each layer's
// parameters (and their gradients and optimizer state). A layer's parameters are all-gathered just before
// it runs, forward and again backward, and released (cleared) after; its gradients are reduce-scattered
// as soon as its backward is done, accumulating in the owner's chunk across micro-batches. The
// parameters used outside the layers (the transformer's embeddings) are one more group, gathered for the
// step. The update touches only the shards; there is nothing to send back afterwards.
//
// The arena keeps full-size buffers for every layer (models are built once, for one batch size), so
// peak_memory_bytes does not shrink; what this layout changes is what is communicated and when, and that
// no rank uses a parameter it has not just gathered (released values are zeros, so a missing gather
// shows up as wrong losses in the tests).
#include <unordered_map>

#include "workloads/parallel/buckets.h"
#include "workloads/parallel/gradient_sync.h"

namespace ts::wl {

class Zero3Sync final : public GradientSync {
 public:
  Zero3Sync(Communicator& dp, const ModelPart& model, const LayoutOptions& layout, double timeoutS);
  void beforeForward(StepContext& ctx) override;
  void beforeBackward(StepContext& ctx, bool last) override;
  void afterBackward(bool last) override;
  std::vector<Param*> updateParams() override { return pointersTo(pieces_); }
  double globalSumOfSquares(double local) override { return groupSum(local, true); }
  void afterUpdate() override;
  std::vector<Param*> masterParams() override { return updateParams(); }
  void gatherParameters() override;

 private:
  struct Group {
    std::unique_ptr<Buckets> buckets;  // one bucket: the group's parameters
    Tensor values, grads, received;    // this rank's chunk
    bool gathered = false, accumulate = false;
  };
  Bucket& bucketOf(Group& g) { return g.buckets->all().front(); }
  void gather(Group& g);
  void release(Group& g);
  void sendGradients(Group& g);
  void hook(StepContext& ctx);
  int rank_;
  std::vector<Group> groups_;
  std::unordered_map<const Layer*, std::size_t> groupOf_;
  std::size_t leading_ = SIZE_MAX;  // the group of the parameters outside the layers, if any
  std::vector<Param> pieces_;
  bool firstMicro_ = true;
};

}  // namespace ts::wl
