#include "workloads/parallel/zero3_sync.h"

#include <algorithm>
#include <iterator>
#include <unordered_set>

#include "comm/collectives/collective.h"

namespace ts::wl {

Zero3Groups zero3GroupsOf(const ModelPart& part, int parts) {
  Zero3Groups out;
  auto add = [&](const std::vector<Param*>& params) {
    out.layouts.push_back(std::make_unique<Buckets>(params, 1e12, parts));  // one bucket, however large
  };
  out.leading = !part.leading.empty();
  if (out.leading) add(part.leading);
  // A layer's parameters of the part only: expert parallelism's syncs each take a kind of them (expert_sync.h).
  const std::unordered_set<const Param*> ofPart(part.params.begin(), part.params.end());
  for (Layer* l : part.layers) {
    std::vector<Param*> all, ps;
    l->params(all);
    std::copy_if(all.begin(), all.end(), std::back_inserter(ps), [&](const Param* p) { return ofPart.contains(p); });
    out.ofLayer.push_back(ps.empty() ? SIZE_MAX : out.layouts.size());
    if (!ps.empty()) add(ps);
  }
  return out;
}

Zero3Sync::Zero3Sync(Communicator& dp, const ModelPart& model, const LayoutOptions& layout, double timeoutS)
    : Zero3Sync(dp, model, layout, timeoutS, zero3GroupsOf(model, dp.worldSize())) {}

Zero3Sync::Zero3Sync(Communicator& dp, const ModelPart& model, const LayoutOptions& layout, double timeoutS, Zero3Groups groups)
    : GradientSync(model.params, dp, timeoutS),
      Zero3Order(groups.layouts.size(), groups.leading, layout.prefetch),
      arena_(*model.arena),
      rank_(dp.rank(0)) {
  for (std::unique_ptr<Buckets>& buckets : groups.layouts) {
    Group g;
    g.buckets = std::move(buckets);
    Bucket& b = g.buckets->all().front();
    const auto c = static_cast<std::int64_t>(b.chunk);
    g.gathered.shape = g.sending.shape = {static_cast<std::int64_t>(b.padded)};
    // This rank's chunk only, drawn as the whole model would start (the parameters come deferred: no rank
    // ever holds the whole model; a materialised one is given back).
    g.values = arena_.tensor({c}, MemoryKind::kParameters);
    g.buckets->chunkOfValues(b, rank_, g.values);
    g.grads = arena_.tensor({c}, MemoryKind::kGradients);
    g.buckets->releaseParamGrads(arena_);
    for (const auto& s : b.slots)
      if (s.param->value.data) arena_.release(s.param->value);
    groups_.push_back(std::move(g));
  }
  for (std::size_t i = 0; i < model.layers.size(); ++i)
    if (groups.ofLayer[i] != SIZE_MAX) groupOf_[model.layers[i]] = groups.ofLayer[i];
  for (std::size_t i = 0; i < groups_.size(); ++i)
    for (Param& p : groups_[i].buckets->pieces(bucketOf(i), rank_, groups_[i].grads, &groups_[i].values))
      pieces_.push_back(std::move(p));
}

void Zero3Sync::issueGather(std::size_t i) {
  Group& g = groups_[i];
  Bucket& b = bucketOf(i);
  g.gathered = arena_.tensor(g.gathered.shape, MemoryKind::kParameters);
  copy(viewOf(g.gathered, static_cast<std::size_t>(rank_) * b.chunk, b.chunk), g.values);
  g.gathered.device->synchronize();
  g.gatherOp = tracker_->start({&collectives::all_gather(), g.gathered.data + static_cast<std::size_t>(rank_) * b.chunk,
                                g.gathered.data, b.chunk, DType::kFloat32});
  Buckets::valuesAsViewsOf(b, g.gathered);  // read only once waitGather has waited
}

void Zero3Sync::waitGather(std::size_t i) {
  tracker_->wait(groups_[i].gatherOp);
  groups_[i].gatherOp = -1;
}

void Zero3Sync::dropGathered(std::size_t i) {
  Buckets::unbindValues(bucketOf(i));
  arena_.release(groups_[i].gathered);
}

void Zero3Sync::takeGradientBuffer(std::size_t i) {
  Group& g = groups_[i];
  g.sending = arena_.tensor(g.sending.shape, MemoryKind::kGradients);
  Buckets::gradsAsViewsOf(bucketOf(i), g.sending);
}

void Zero3Sync::issueGradients(std::size_t i) {
  Group& g = groups_[i];
  Bucket& b = bucketOf(i);
  Buckets::unbindGrads(b);
  g.sending.device->synchronize();
  // In place: this rank's reduced chunk lands at its own place in the buffer.
  g.op = tracker_->start({&collectives::reduce_scatter(), g.sending.data,
                          g.sending.data + static_cast<std::size_t>(rank_) * b.chunk, b.chunk, DType::kFloat32});
}

void Zero3Sync::retireGradients(std::size_t i) {
  Group& g = groups_[i];
  tracker_->wait(g.op);
  const std::size_t chunk = bucketOf(i).chunk;
  accumulateInto(g.grads, viewOf(g.sending, static_cast<std::size_t>(rank_) * chunk, chunk), firstMicro_);
  arena_.release(g.sending);
}

void Zero3Sync::waitAll() { tracker_->waitAll(); }

void Zero3Sync::poll() { tracker_->poll(); }  // MPI progresses what is in flight only when entered

void Zero3Sync::hook(StepContext& ctx) {
  auto groupOf = [this](Layer& l) {
    const auto it = groupOf_.find(&l);
    return it == groupOf_.end() ? kNone : it->second;
  };
  ctx.beforeForward = [=, this](Layer& l) { layerForwardStarts(groupOf(l)); };
  ctx.afterForward = [=, this](Layer& l) { layerForwardEnds(groupOf(l)); };
  ctx.beforeBackward = [=, this](Layer& l) { layerBackwardStarts(groupOf(l)); };
  ctx.afterBackward = [=, this](Layer& l) { layerBackwardEnds(groupOf(l)); };
}

void Zero3Sync::beforeForward(StepContext& ctx) {
  hook(ctx);
  forwardStarts();
}

void Zero3Sync::afterForwardOnly() { forwardOnlyEnds(); }

void Zero3Sync::beforeBackward(StepContext& ctx, bool) {
  ctx.gradReady = nullptr;
  hook(ctx);
  backwardStarts();
}

void Zero3Sync::afterBackward(bool last) { backwardEnds(last); }

void Zero3Sync::visitParameters(const std::function<void(Param&)>& visit) {
  for (std::size_t i = 0; i < groups_.size(); ++i) {
    const bool held = gathered(i);  // the leading group during a step
    gather(i);
    for (const auto& s : bucketOf(i).slots) visit(*s.param);
    if (!held) release(i);
  }
}

}  // namespace ts::wl
