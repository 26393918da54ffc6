#pragma once
// The sharded updates: ZeRO stages 1 and 2 (--zero) and the parameter server (--sync ps). Both split
// every bucket into equal chunks, one per owner; an owner keeps the reduced gradients and the optimizer
// state of its chunks only, updates the parameters they cover, and sends them back:
//   zero 1   the final micro-batch's buckets are reduce-scattered in place (chunk k to data-parallel rank
//            k, which reads its reduced chunk where it was); the updated chunks are all-gathered in the
//            same flats. Memory: full parameters and gradients, 1/N of the optimizer state.
//   zero 2   a bucket's flat exists only from its first layer's backward until its reduce-scatter is
//            done: every micro-batch's buckets are reduce-scattered and the owner adds its chunk into a
//            shard-sized gradient. Memory: full parameters, 1/N of the gradients and optimizer state, and
//            the buckets of the layer running its backward.
// The parameters are views of flats laid out as the buckets, so the owners update their chunks in place
// and the values go back with an in-place all-gather (broadcast), without a copy or a buffer.
//   ps       the final micro-batch's buckets are reduced in place, chunk k to server k (--ps-shards
//            servers, data-parallel ranks 0..S-1, which also train); each server updates its chunks and
//            broadcasts them.
// LAMB's trust ratio needs whole-tensor norms and a chunk may hold part of a tensor: the optimizer adds the
// pieces' sums over the group (part_sums.h).
#include <unordered_map>

#include "workloads/parallel/buckets.h"
#include "workloads/parallel/gradient_sync.h"

namespace ts::wl {

class ShardedSync final : public GradientSync {
 public:
  ShardedSync(Communicator& dp, const ModelPart& model, const LayoutOptions& layout, double timeoutS);
  void beforeBackward(StepContext& ctx, bool last) override;
  void afterBackward(bool last) override;
  std::vector<Param*> updateParams() override { return pointersTo(pieces_); }
  double globalSumOfSquares(double local) override;
  void afterUpdate() override;

 private:
  bool communicates(bool last) const { return zero2_ || last; }
  void launch(Bucket& b);
  // ZeRO-2: takes the buckets a layer's backward writes into (retiring all but the last one sent first).
  void takeFor(const std::vector<std::size_t>& buckets);
  // ZeRO-2: waits for b's reduce-scatter, adds its chunk into the shard, and gives the flat back.
  void retire(Bucket& b);
  std::size_t indexOf(const Bucket& b) { return static_cast<std::size_t>(&b - buckets_.all().data()); }
  std::vector<Param*> params_;
  Arena& arena_;
  bool ps_, zero2_, overlap_;
  int parts_, owned_;  // owned_: the chunk index this rank owns, -1 for none (a ps worker)
  Buckets buckets_;
  std::vector<Tensor> values_;      // per bucket: the parameters' values, laid out as the bucket (they are views of it)
  std::vector<Tensor> shardGrads_;  // per bucket: the owned chunk's reduced gradient
  std::vector<Param> pieces_;
  std::unordered_map<const Layer*, std::vector<std::size_t>> bucketsOf_;  // zero 2: the buckets a layer's parameters are in
  std::vector<std::size_t> leadingBuckets_;                               // zero 2: those of the parameters outside the layers
  std::vector<std::size_t> sent_;                                         // zero 2: launched, not yet retired, oldest first
  int micro_ = 0;                                                         // micro-batches communicated this step
};

// Its plan (SyncPlan): the same buckets and owners (`replica`: this rank's place in the data-parallel group).
std::unique_ptr<SyncPlan> shardedSyncPlan(const ModelPart& part, const LayoutOptions& layout, int replica, StepPlan& plan,
                                          PlanGroup dp);

}  // namespace ts::wl
