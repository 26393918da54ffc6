#include "workloads/parallel/sharded_sync.h"

#include <algorithm>

#include "comm/collectives/collective.h"
#include "workloads/parallel/bucket_plan.h"

namespace ts::wl {

ShardedSync::ShardedSync(Communicator& dp, const ModelPart& model, const LayoutOptions& layout, double timeoutS)
    : GradientSync(model.params, dp, timeoutS),
      params_(model.params),
      arena_(*model.arena),
      ps_(layout.sync == SyncKind::kParameterServer),
      zero2_(layout.zero == 2),
      overlap_(layout.overlap),
      parts_(ps_ ? layout.psShards : dp.worldSize()),
      owned_(dp.rank(0) < parts_ ? dp.rank(0) : -1),
      buckets_(params_, layout.bucketMb, parts_) {
  buckets_.releaseParamGrads(arena_);
  if (!zero2_) buckets_.takeAll(arena_);
  for (Bucket& b : buckets_.all()) {
    // The parameters become views of a flat of their own, laid out as the bucket: the owner updates its
    // chunk where it lies, and the all-gather (broadcast) fills the rest in place: nothing is copied.
    const Tensor values = Buckets::moveValuesIntoFlat(b, arena_);
    values_.push_back(values);
    const Tensor ownedValues = owned_ >= 0 ? viewOf(values, owned_ * b.chunk, b.chunk) : Tensor{};
    const auto c = static_cast<std::int64_t>(b.chunk);
    // zero 1 and ps reduce in place: the owned chunk's reduced gradient stays in the flat. zero 2's flats
    // come and go, so its reduced chunks add up in a shard of their own.
    if (owned_ < 0)
      shardGrads_.emplace_back();
    else
      shardGrads_.push_back(zero2_ ? arena_.tensor({c}, MemoryKind::kGradients) : viewOf(b.flat, owned_ * b.chunk, b.chunk));
    if (owned_ >= 0)
      for (Param& p : buckets_.pieces(b, owned_, shardGrads_.back(), &ownedValues)) pieces_.push_back(std::move(p));
  }
  auto bucketsFor = [&](const std::vector<Param*>& ps) {
    std::vector<std::size_t> out;
    for (const Param* p : ps)
      if (buckets_.holds(*p)) out.push_back(buckets_.bucketOf(*p));
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  };
  if (zero2_) {
    for (Layer* l : model.layers) {
      std::vector<Param*> ps;
      l->params(ps);
      if (std::vector<std::size_t> mine = bucketsFor(ps); !mine.empty()) bucketsOf_[l] = std::move(mine);
    }
    leadingBuckets_ = bucketsFor(model.leading);
  }
}

void ShardedSync::launch(Bucket& b) {
  b.flat.device->synchronize();
  if (ps_) {
    for (int k = 0; k < parts_; ++k)
      b.op = tracker_->start({&collectives::reduce(), b.chunkData(k), b.chunkData(k), b.chunk, DType::kFloat32, RedOp::kSum, k});
  } else {
    // In place: this rank's reduced chunk lands at its own place in the flat.
    b.op = tracker_->start(
        {&collectives::reduce_scatter(), b.flat.data, b.chunkData(owned_), b.chunk, DType::kFloat32, RedOp::kSum});
  }
  b.launched = true;
  if (zero2_) sent_.push_back(indexOf(b));
}

void ShardedSync::retire(Bucket& b) {
  tracker_->wait(b.op);
  const std::size_t i = indexOf(b);
  accumulateInto(shardGrads_[i], viewOf(b.flat, static_cast<std::size_t>(owned_) * b.chunk, b.chunk), micro_ == 0);
  buckets_.give(b, arena_);
}

void ShardedSync::takeFor(const std::vector<std::size_t>& list) {
  auto& all = buckets_.all();
  // What was sent is done with first, so that only the running layer's buckets hold memory: a bucket's
  // reduce-scatter still overlaps the rest of its layer's backward (a linear layer's input gradient comes
  // after its weight gradient).
  for (std::size_t i : sent_) retire(all[i]);
  sent_.clear();
  for (std::size_t i : list)
    if (!all[i].flat.data) buckets_.take(all[i], arena_);
}

void ShardedSync::beforeBackward(StepContext& ctx, bool last) {
  buckets_.startMicroBatch();
  ctx.gradReady = nullptr;
  ctx.beforeBackward = nullptr;
  if (zero2_) {
    if (overlap_) {
      ctx.beforeBackward = [this](Layer& l) {
        if (const auto it = bucketsOf_.find(&l); it != bucketsOf_.end()) takeFor(it->second);
      };
      takeFor(leadingBuckets_);
    } else {
      for (Bucket& b : buckets_.all()) buckets_.take(b, arena_);  // sent after the backward: all held until then
    }
  }
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
  if (zero2_) {
    for (std::size_t i : sent_) retire(buckets_.all()[i]);
    sent_.clear();
    ++micro_;
  }
  tracker_->waitAll();
  if (last) micro_ = 0;
}

double ShardedSync::globalSumOfSquares(double local) { return groupSum(local, true); }

void ShardedSync::afterUpdate() {
  auto& all = buckets_.all();
  for (std::size_t i = 0; i < all.size(); ++i) {
    const Bucket& b = all[i];
    float* v = values_[i].data;
    if (i == 0) values_[i].device->synchronize();  // the updates are done
    if (ps_) {
      for (int k = 0; k < parts_; ++k)
        tracker_->start({&collectives::broadcast(), v + k * b.chunk, v + k * b.chunk, b.chunk, DType::kFloat32, RedOp::kSum, k});
    } else {
      tracker_->start({&collectives::all_gather(), v + owned_ * b.chunk, v, b.chunk, DType::kFloat32});
    }
  }
  tracker_->waitAll();
}

namespace {

class ShardedPlan final : public BucketsPlan {
 public:
  ShardedPlan(const ModelPart& part, const LayoutOptions& l, int replica, StepPlan& plan, PlanGroup dp)
      : BucketsPlan(part, l, l.sync == SyncKind::kParameterServer ? l.psShards : dp.size, plan, dp),
        ps_(l.sync == SyncKind::kParameterServer),
        zero2_(l.zero == 2),
        parts_(ps_ ? l.psShards : dp.size),
        owned_(replica < parts_ ? replica : -1) {
    for (Layer* layer : part.layers) {
      std::vector<Param*> ps;
      layer->params(ps);
      hasParams_.push_back(!ps.empty());
    }
  }
  void beforeBackward(PlanContext& ctx, bool last) override {
    ctx.beforeBackward = nullptr;
    // ZeRO-2 retires what was sent when a layer with parameters takes its buckets (ShardedSync::takeFor).
    if (zero2_ && overlap_)
      ctx.beforeBackward = [this](std::size_t layer) {
        if (layer < hasParams_.size() && hasParams_[layer]) retireSent();
      };
    launchAsReady(ctx, zero2_ || last);
  }
  void afterBackward(bool last) override {
    if (!zero2_ && !last) return;
    launchRest();
    if (zero2_) retireSent();
    plan_.waitAll(dp_);
  }
  void globalSumOfSquares() override { plan_.sum(1, dp_); }
  void afterUpdate() override {
    for (std::size_t b = 0; b < count(); ++b)
      if (ps_)
        for (int k = 0; k < parts_; ++k)
          plan_.issue(collectives::broadcast(), bucket(b).chunk, sizeof(float), dp_, CallPlacement::kInPlace);
      else
        plan_.issue(collectives::all_gather(), bucket(b).chunk, sizeof(float), dp_, CallPlacement::kInPlace);
    plan_.waitAll(dp_);
  }
  std::uint64_t updateElements() const override {
    std::uint64_t n = 0;
    for (std::size_t b = 0; owned_ >= 0 && b < count(); ++b) n += coveredBy(bucket(b), owned_);
    return n;
  }

 private:
  void launch(std::size_t b) override {
    if (ps_)
      for (int k = 0; k < parts_; ++k)
        plan_.issue(collectives::reduce(), bucket(b).chunk, sizeof(float), dp_, CallPlacement::kInPlace);
    else if (const int op =
                 plan_.issue(collectives::reduce_scatter(), bucket(b).chunk, sizeof(float), dp_, CallPlacement::kInPlace);
             zero2_)
      sent_.push_back(op);
  }
  void retireSent() {
    for (int op : sent_) plan_.wait(op);
    sent_.clear();
  }
  bool ps_, zero2_;
  int parts_, owned_;
  std::vector<bool> hasParams_;
  std::vector<int> sent_;  // ZeRO-2: the reduce-scatters launched, not yet retired
};

}  // namespace

std::unique_ptr<SyncPlan> shardedSyncPlan(const ModelPart& part, const LayoutOptions& layout, int replica, StepPlan& plan,
                                          PlanGroup dp) {
  return std::make_unique<ShardedPlan>(part, layout, replica, plan, std::move(dp));
}

}  // namespace ts::wl
