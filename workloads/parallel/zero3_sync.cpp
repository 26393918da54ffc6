#include "workloads/parallel/zero3_sync.h"

#include "comm/collectives/collective.h"
#include "workloads/ops.h"

namespace ts::wl {

Zero3Sync::Zero3Sync(Communicator& dp, const ModelPart& model, const LayoutOptions&, double timeoutS)
    : GradientSync(model.params, dp, timeoutS), rank_(dp.rank(0)) {
  const int parts = dp.worldSize();
  auto addGroup = [&](const std::vector<Param*>& params) {
    Group g;
    g.buckets = std::make_unique<Buckets>(params, 1e12, parts, *model.arena);  // one bucket, however large
    const auto c = static_cast<std::int64_t>(bucketOf(g).chunk);
    g.values = model.arena->tensor({c});
    g.grads = model.arena->tensor({c});
    g.received = model.arena->tensor({c});
    // Every rank built the same initial weights (same seed): keep this rank's chunk, release the rest.
    Bucket& b = bucketOf(g);
    g.buckets->valuesToFlat(b);
    copy(g.values, viewOf(b.flat, static_cast<std::size_t>(rank_) * b.chunk, b.chunk));
    groups_.push_back(std::move(g));
    release(groups_.back());
  };
  if (!model.leading.empty()) {
    leading_ = 0;
    addGroup(model.leading);
  }
  for (Layer* l : model.layers) {
    std::vector<Param*> ps;
    l->params(ps);
    if (ps.empty()) continue;
    groupOf_[l] = groups_.size();
    addGroup(ps);
  }
  for (Group& g : groups_)
    for (Param& p : g.buckets->pieces(bucketOf(g), rank_, g.grads, &g.values)) pieces_.push_back(std::move(p));
}

void Zero3Sync::gather(Group& g) {
  if (g.gathered) return;
  Bucket& b = bucketOf(g);
  copy(viewOf(b.flat, static_cast<std::size_t>(rank_) * b.chunk, b.chunk), g.values);
  b.flat.device->synchronize();
  tracker_->run({&collectives::all_gather(), b.chunkData(rank_), b.flat.data, b.chunk, DType::kFloat32});
  g.buckets->valuesFromFlat(b);
  g.gathered = true;
}

void Zero3Sync::release(Group& g) {
  for (const auto& s : bucketOf(g).slots) zero(s.param->value);
  g.gathered = false;
}

void Zero3Sync::sendGradients(Group& g) {
  Bucket& b = bucketOf(g);
  b.ready = 0;
  for (auto& s : b.slots) s.deposited = false;
  g.buckets->depositRest(b);
  for (const auto& s : b.slots) zero(s.param->grad);  // sent: the next micro-batch starts afresh
  b.flat.device->synchronize();
  g.accumulate = !firstMicro_;
  tracker_->start(
      {&collectives::reduce_scatter(), b.flat.data, g.accumulate ? g.received.data : g.grads.data, b.chunk, DType::kFloat32});
  tracker_->poll();
}

void Zero3Sync::hook(StepContext& ctx) {
  auto groupOf = [this](Layer& l) -> Group* {
    const auto it = groupOf_.find(&l);
    return it == groupOf_.end() ? nullptr : &groups_[it->second];
  };
  ctx.beforeForward = [=, this](Layer& l) {
    if (Group* g = groupOf(l)) gather(*g);
  };
  ctx.afterForward = [=, this](Layer& l) {
    if (Group* g = groupOf(l)) release(*g);
  };
  ctx.beforeBackward = ctx.beforeForward;
  ctx.afterBackward = [=, this](Layer& l) {
    if (Group* g = groupOf(l)) {
      sendGradients(*g);
      release(*g);
    }
  };
}

void Zero3Sync::beforeForward(StepContext& ctx) {
  hook(ctx);
  if (leading_ != SIZE_MAX) gather(groups_[leading_]);
}

void Zero3Sync::beforeBackward(StepContext& ctx, bool) {
  ctx.gradReady = nullptr;
  hook(ctx);
}

void Zero3Sync::afterBackward(bool last) {
  if (leading_ != SIZE_MAX) sendGradients(groups_[leading_]);
  tracker_->waitAll();
  for (Group& g : groups_)
    if (g.accumulate) {
      ops::axpy(*g.grads.device, g.grads.data, g.received.data, 1.0f, g.grads.numel());
      g.accumulate = false;
    }
  firstMicro_ = last;
  if (last && leading_ != SIZE_MAX) release(groups_[leading_]);
}

void Zero3Sync::afterUpdate() {}

void Zero3Sync::gatherParameters() {
  for (Group& g : groups_) gather(g);
}

}  // namespace ts::wl
