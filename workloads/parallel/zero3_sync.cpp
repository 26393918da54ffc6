#include "workloads/parallel/zero3_sync.h"

#include "comm/collectives/collective.h"

namespace ts::wl {

Zero3Groups zero3GroupsOf(const ModelPart& part, int parts) {
  Zero3Groups out;
  auto add = [&](const std::vector<Param*>& params) {
    out.layouts.push_back(std::make_unique<Buckets>(params, 1e12, parts));  // one bucket, however large
  };
  out.leading = !part.leading.empty();
  if (out.leading) add(part.leading);
  for (Layer* l : part.layers) {
    std::vector<Param*> ps;
    l->params(ps);
    out.ofLayer.push_back(ps.empty() ? SIZE_MAX : out.layouts.size());
    if (!ps.empty()) add(ps);
  }
  return out;
}

Zero3Sync::Zero3Sync(Communicator& dp, const ModelPart& model, const LayoutOptions& layout, double timeoutS)
    : GradientSync(model.params, dp, timeoutS), arena_(*model.arena), rank_(dp.rank(0)), prefetch_(layout.prefetch) {
  Zero3Groups groups = zero3GroupsOf(model, dp.worldSize());
  if (groups.leading) {
    leading_ = 0;
    firstLayer_ = 1;
  }
  for (std::unique_ptr<Buckets>& buckets : groups.layouts) {
    Group g;
    g.buckets = std::move(buckets);
    Bucket& b = bucketOf(g);
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
  for (Group& g : groups_)
    for (Param& p : g.buckets->pieces(bucketOf(g), rank_, g.grads, &g.values)) pieces_.push_back(std::move(p));
}

void Zero3Sync::startGather(Group& g) {
  if (g.gathered.data) return;
  Bucket& b = bucketOf(g);
  g.gathered = arena_.tensor(g.gathered.shape, MemoryKind::kParameters);
  copy(viewOf(g.gathered, static_cast<std::size_t>(rank_) * b.chunk, b.chunk), g.values);
  g.gathered.device->synchronize();
  g.gatherOp = tracker_->start({&collectives::all_gather(), g.gathered.data + static_cast<std::size_t>(rank_) * b.chunk,
                                g.gathered.data, b.chunk, DType::kFloat32});
  Buckets::valuesAsViewsOf(b, g.gathered);  // read only once gather() has waited
}

void Zero3Sync::gather(Group& g) {
  startGather(g);
  if (g.gatherOp < 0) return;
  tracker_->wait(g.gatherOp);
  g.gatherOp = -1;
}

void Zero3Sync::prefetch(std::size_t from, bool forward) {
  std::size_t i = from;
  for (int k = 0; k < prefetch_; ++k) {
    if (forward ? i + 1 >= groups_.size() : i <= firstLayer_) break;
    i = forward ? i + 1 : i - 1;
    startGather(groups_[i]);
  }
  tracker_->poll();  // MPI progresses what is in flight only when entered
}

void Zero3Sync::release(Group& g) {
  if (!g.gathered.data) return;
  gather(g);  // a prefetch nobody used lands before its buffer goes
  Buckets::unbindValues(bucketOf(g));
  arena_.release(g.gathered);
}

void Zero3Sync::releaseLayers() {
  for (std::size_t i = firstLayer_; i < groups_.size(); ++i) release(groups_[i]);
}

void Zero3Sync::takeGradients(Group& g) {
  // The oldest gradients in flight are done with first: at most one group's are sent while the next
  // group's backward writes its own.
  while (!sent_.empty()) {
    retire(groups_[sent_.front()]);
    sent_.erase(sent_.begin());
  }
  g.sending = arena_.tensor(g.sending.shape, MemoryKind::kGradients);
  Buckets::gradsAsViewsOf(bucketOf(g), g.sending);
}

void Zero3Sync::sendGradients(Group& g) {
  Bucket& b = bucketOf(g);
  Buckets::unbindGrads(b);
  g.sending.device->synchronize();
  // In place: this rank's reduced chunk lands at its own place in the buffer.
  g.op = tracker_->start({&collectives::reduce_scatter(), g.sending.data,
                          g.sending.data + static_cast<std::size_t>(rank_) * b.chunk, b.chunk, DType::kFloat32});
  sent_.push_back(static_cast<std::size_t>(&g - groups_.data()));
  tracker_->poll();
}

void Zero3Sync::retire(Group& g) {
  tracker_->wait(g.op);
  const std::size_t chunk = bucketOf(g).chunk;
  accumulateInto(g.grads, viewOf(g.sending, static_cast<std::size_t>(rank_) * chunk, chunk), firstMicro_);
  arena_.release(g.sending);
}

void Zero3Sync::hook(StepContext& ctx) {
  auto groupOf = [this](Layer& l) -> Group* {
    const auto it = groupOf_.find(&l);
    return it == groupOf_.end() ? nullptr : &groups_[it->second];
  };
  // Every layer's boundary, with parameters or not (activations, norms without them), enters MPI once: what
  // is in flight progresses only then.
  ctx.beforeForward = [=, this](Layer& l) {
    if (Group* g = groupOf(l)) {
      gather(*g);
      prefetch(static_cast<std::size_t>(g - groups_.data()), true);
    } else {
      tracker_->poll();
    }
  };
  ctx.afterForward = [=, this](Layer& l) {
    tracker_->poll();
    // The last layer's backward comes next: it keeps its gathered values (an evaluation's afterForwardOnly
    // lets them go).
    if (Group* g = groupOf(l); g && g != &groups_.back()) release(*g);
  };
  ctx.beforeBackward = [=, this](Layer& l) {
    if (Group* g = groupOf(l)) {
      takeGradients(*g);
      gather(*g);
      prefetch(static_cast<std::size_t>(g - groups_.data()), false);
    } else {
      tracker_->poll();
    }
  };
  ctx.afterBackward = [=, this](Layer& l) {
    if (Group* g = groupOf(l)) {
      sendGradients(*g);  // polls
      release(*g);
    } else {
      tracker_->poll();
    }
  };
}

void Zero3Sync::beforeForward(StepContext& ctx) {
  hook(ctx);
  if (leading_ == SIZE_MAX) return;
  gather(groups_[leading_]);
  prefetch(leading_, true);  // the first layers' gathers beside the embedding's compute
}

void Zero3Sync::afterForwardOnly() {
  releaseLayers();                                       // the last layer, held for a backward that is not coming
  if (leading_ != SIZE_MAX) release(groups_[leading_]);  // and the embeddings
}

void Zero3Sync::beforeBackward(StepContext& ctx, bool) {
  ctx.gradReady = nullptr;
  hook(ctx);
  // The embeddings' backward runs after every layer's: their gradients are held through it, sent last.
  if (leading_ != SIZE_MAX) takeGradients(groups_[leading_]);
}

void Zero3Sync::afterBackward(bool last) {
  if (leading_ != SIZE_MAX) sendGradients(groups_[leading_]);
  for (std::size_t i : sent_) retire(groups_[i]);
  sent_.clear();
  releaseLayers();  // none is left gathered between micro-batches and steps (a pipeline stage's forward may follow)
  tracker_->waitAll();
  firstMicro_ = last;
  if (last && leading_ != SIZE_MAX) release(groups_[leading_]);
}

void Zero3Sync::visitParameters(const std::function<void(Param&)>& visit) {
  for (Group& g : groups_) {
    const bool held = g.gathered.data != nullptr;  // the leading group during a step
    gather(g);
    for (const auto& s : bucketOf(g).slots) visit(*s.param);
    if (!held) release(g);
  }
}

}  // namespace ts::wl
