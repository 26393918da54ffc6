#pragma once
// The sharded updates: ZeRO stages 1 and 2 (--zero) and the parameter server (--sync ps). Both split
// every bucket into equal chunks, one per owner; an owner keeps the reduced gradients and the optimizer
// state of its chunks only, updates the parameters they cover, and sends them back:
//   zero 1   the final micro-batch's buckets are reduce-scattered (chunk k to data-parallel rank k);
//            the updated chunks are all-gathered.
//   zero 2   every micro-batch's buckets are reduce-scattered and the owner accumulates its chunk; a
//            rank's full gradients live only until their bucket is sent (the accumulation happens in
//            the shard), so gradient memory is sharded too.
//   ps       the final micro-batch's buckets are reduced, chunk k to server k (--ps-shards servers,
//            data-parallel ranks 0..S-1, which also train); each server updates its chunks and
//            broadcasts them.
// LAMB is not offered here: its trust ratio needs whole-tensor norms, and a chunk may hold part of one.
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
  std::vector<Param*> params_;
  bool ps_, zero2_, overlap_;
  int parts_, owned_;  // owned_: the chunk index this rank owns, -1 for none (a ps worker)
  Buckets buckets_;
  std::vector<Tensor> shardGrads_, received_;  // per bucket: the owned chunk's gradient; zero 2's landing place
  std::vector<Param> pieces_;
  int micro_ = 0;  // micro-batches communicated this step
};

}  // namespace ts::wl
