#include "workloads/parallel/sharded_sync.h"

#include "comm/collectives/collective.h"
#include "workloads/ops.h"

namespace ts::wl {

ShardedSync::ShardedSync(Communicator& dp, const ModelPart& model, const LayoutOptions& layout, double timeoutS)
    : GradientSync(model.params, dp, timeoutS),
      params_(model.params),
      ps_(layout.sync == SyncKind::kParameterServer),
      zero2_(layout.zero == 2),
      overlap_(layout.overlap),
      parts_(ps_ ? layout.psShards : dp.worldSize()),
      owned_(dp.rank(0) < parts_ ? dp.rank(0) : -1),
      buckets_(params_, layout.bucketMb, parts_, *model.arena) {
  for (Bucket& b : buckets_.all()) {
    const auto c = static_cast<std::int64_t>(b.chunk);
    shardGrads_.push_back(owned_ >= 0 ? model.arena->tensor({c}) : Tensor{});
    received_.push_back(zero2_ ? model.arena->tensor({c}) : Tensor{});
    if (owned_ >= 0)
      for (Param& p : buckets_.pieces(b, owned_, shardGrads_.back())) pieces_.push_back(std::move(p));
  }
}

void ShardedSync::launch(Bucket& b) {
  b.flat.device->synchronize();
  const std::size_t i = static_cast<std::size_t>(&b - buckets_.all().data());
  if (ps_) {
    for (int k = 0; k < parts_; ++k)
      tracker_->start({&collectives::reduce(), b.chunkData(k), b.chunkData(k), b.chunk, DType::kFloat32, RedOp::kSum, k});
  } else {
    float* into = (zero2_ && micro_ > 0) ? received_[i].data : shardGrads_[i].data;
    tracker_->start({&collectives::reduce_scatter(), b.flat.data, into, b.chunk, DType::kFloat32, RedOp::kSum});
  }
  b.launched = true;
}

void ShardedSync::beforeBackward(StepContext& ctx, bool last) {
  buckets_.startMicroBatch();
  ctx.gradReady = nullptr;
  if (!communicates(last) || !overlap_) return;
  ctx.gradReady = [this](Param& p) {
    if (Bucket* b = buckets_.deposit(p)) launch(*b);
    tracker_->poll();
  };
}

void ShardedSync::afterBackward(bool last) {
  if (!communicates(last)) return;
  for (Bucket& b : buckets_.all())
    if (!b.launched) {
      buckets_.depositRest(b);
      launch(b);
    }
  tracker_->waitAll();
  auto& list = buckets_.all();
  for (std::size_t i = 0; i < list.size(); ++i) {
    Bucket& b = list[i];
    Device& d = *b.flat.device;
    if (ps_ && owned_ >= 0) copy(shardGrads_[i], viewOf(b.flat, static_cast<std::size_t>(owned_) * b.chunk, b.chunk));
    if (zero2_ && micro_ > 0) ops::axpy(d, shardGrads_[i].data, received_[i].data, 1.0f, b.chunk);
  }
  if (zero2_) {
    // The full gradients have been sent: the next micro-batch starts them afresh (accumulation is in the shard).
    for (Param* p : params_) zero(p->grad);
    ++micro_;
  }
  if (last) micro_ = 0;
}

double ShardedSync::globalSumOfSquares(double local) { return groupSum(local, true); }

void ShardedSync::afterUpdate() {
  for (Bucket& b : buckets_.all()) {
    buckets_.valuesToFlat(b);
    b.flat.device->synchronize();
    if (ps_) {
      for (int k = 0; k < parts_; ++k)
        tracker_->start({&collectives::broadcast(), b.chunkData(k), b.chunkData(k), b.chunk, DType::kFloat32, RedOp::kSum, k});
    } else {
      tracker_->start({&collectives::all_gather(), b.chunkData(owned_), b.flat.data, b.chunk, DType::kFloat32});
    }
  }
  tracker_->waitAll();
  for (Bucket& b : buckets_.all()) buckets_.valuesFromFlat(b);
}

}  // namespace ts::wl
