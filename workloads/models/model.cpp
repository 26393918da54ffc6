#include "workloads/models/model.h"

#include <optional>

#include <fmt/format.h>

#include "base/error.h"
#include "kernels/trace.h"
#include "workloads/batch_staging.h"
#include "workloads/layers/param_init.h"
#include "workloads/mixed_precision.h"
#include "workloads/models/sequential_classifier.h"

namespace ts::wl {

nlohmann::json ModelConfig::toJson() const {
  nlohmann::json j = {
      {"kind", nameOf(kind)}, {"preset", preset}, {"input_shape", inputShape}, {"classes", classes}, {"seed", seed}};
  switch (kind) {
    case ModelKind::kMlp:
      j["depth"] = depth;
      j["width"] = width;
      j["activation"] = nameOf(activation);
      break;
    case ModelKind::kCnn:
      j["widths"] = widths;
      j["blocks"] = blocks;
      j["stem"] = nameOf(stem);
      break;
    case ModelKind::kTransformer:
      j["layers"] = layers;
      j["hidden"] = hidden;
      j["heads"] = heads;
      j["seq_len"] = seqLen;
      j["vocab"] = vocab;
      if (moe.enabled()) {
        j["experts"] = moe.experts;
        j["top_k"] = moe.topK;
      }
      break;
  }
  return j;
}

std::vector<Param*> Model::params() {
  std::vector<Param*> out = leading_;
  for (auto& l : layers_) l->params(out);
  return out;
}

std::vector<Layer*> Model::layers() {
  std::vector<Layer*> out;
  for (auto& l : layers_) out.push_back(l.get());
  return out;
}

std::vector<NamedTensor> Model::buffers() {
  std::vector<NamedTensor> out;
  for (auto& l : layers_) l->buffers(out);
  return out;
}

std::int64_t Model::parameterCount() {
  std::int64_t n = 0;
  for (Param* p : params()) n += static_cast<std::int64_t>(p->value.numel());
  return n;
}

const Tensor& Model::forwardLayers(const Tensor& x, StepContext& ctx, std::size_t from, std::size_t to) {
  const Tensor* y = &x;
  for (std::size_t i = from; i < to; ++i) {
    Layer& l = *layers_[i];
    trace::Span span("forward layer", trace::Role::kCompute, static_cast<int>(i));
    if (ctx.beforeForward) ctx.beforeForward(l);
    y = &l.forward(*y, ctx);
    roundTo(compute_, *y);
    if (ctx.afterForward) ctx.afterForward(l);
  }
  return *y;
}

const Tensor& Model::backwardLayers(const Tensor& dy, StepContext& ctx, std::size_t from, std::size_t to) {
  const Tensor* d = &dy;
  roundTo(compute_, *d);
  for (std::size_t i = to; i-- > from;) {
    Layer& l = *layers_[i];
    trace::Span span("backward layer", trace::Role::kCompute, static_cast<int>(i));
    if (ctx.beforeBackward) ctx.beforeBackward(l);
    d = &l.backward(*d, ctx);
    roundTo(compute_, *d);
    if (ctx.afterBackward) ctx.afterBackward(l);
  }
  return *d;
}

double Model::lossForward(const Tensor& logits, const data::Batch& batch) {
  logits_ = &logits;
  const std::optional<StagedRows> staged = stagedRows(*logits.device, batch);
  return loss_->forward(logits, batch.targets.data(), staged ? staged->targets : nullptr);
}

const Tensor& Model::lossBackward(float scale) { return loss_->backward(scale); }

double Model::forward(const data::Batch& batch, StepContext& ctx) {
  ctx.step = batch.step;
  ctx.firstSample = batch.firstPosition;
  return lossForward(forwardLayers(embed(batch, ctx), ctx, 0, layers_.size()), batch);
}

void Model::backward(float scale, StepContext& ctx) {
  ctx.lossScale = scale;
  embedBackward(backwardLayers(lossBackward(scale), ctx, 0, layers_.size()), ctx);
}

double Model::forwardFlops() const {
  double f = 0;
  for (const auto& l : layers_) f += l->forwardFlops();
  return f;
}

double Model::recomputedFlops() const {
  double f = 0;
  for (const auto& l : layers_) f += l->recomputedFlops();
  return f;
}

Model::Model(ModelConfig config, Device& device) : config_(std::move(config)), arena_(device) {
  arena_.deferParameters();
  scopeFor(config_.built.from == 0);  // the embedding: the first stage's
}

std::size_t Model::scratchActivationBytes() const {
  std::size_t n = 0;
  for (const auto& s : scratch_)
    if (s) n += s->bytes();
  return n;
}

bool Model::scratch() const {
  const ActivationPool* p = arena_.activationPool();
  return p && (p == scratch_[0].get() || p == scratch_[1].get());
}

void Model::scopeFor(bool builds) {
  if (builds) {
    arena_.poolActivations(nullptr);
    return;
  }
  if (!scratch_[0])
    for (auto& s : scratch_) s = std::make_unique<ActivationPool>(arena_, true);
  // A layer reads only its predecessor's output: in a probe, what is built next takes the other set once this one
  // is used.
  if (config_.built.runsScratch && scratch() && scratch_[scratchSide_]->unitUsed()) scratchSide_ ^= 1;
  if (!scratch()) scratchSide_ = 0;
  scratch_[scratchSide_]->beginUnit();
  arena_.poolActivations(scratch_[scratchSide_].get());
}

void Model::add(std::unique_ptr<Layer> layer) {
  layers_.push_back(std::move(layer));
  scopeFor(config_.built.builds(layers_.size()));
}

void Model::beginTail() { scopeFor(config_.built.tail); }

void Model::addRecomputedUnit(const RecomputedUnit& unit, const std::function<std::vector<std::unique_ptr<Layer>>()>& build) {
  if (!recomputePools_) recomputePools_ = std::make_unique<RecomputePools>(arena_);
  RecomputedUnit u = unit;
  u.kept = !scratch();
  std::vector<std::unique_ptr<Layer>> layers;
  {
    // Another stage's unit too: only one unit runs at a time, its forward in the probe (BuiltLayers).
    const PooledActivations scope(arena_, recomputePools_->internals);
    layers = build();
  }
  add(std::make_unique<Recomputed>(arena_, *recomputePools_, u, std::move(layers), compute_));
}

void Model::addRecomputedUnit(const RecomputedUnit& unit, const std::function<std::unique_ptr<Layer>()>& build) {
  addRecomputedUnit(unit, std::function<std::vector<std::unique_ptr<Layer>>()>([&] {
                      std::vector<std::unique_ptr<Layer>> one;
                      one.push_back(build());
                      return one;
                    }));
}

ActivationPool* Model::scorePool() {
  if (!scorePool_) scorePool_ = std::make_unique<ActivationPool>(arena_);
  return scorePool_.get();
}

void Model::zeroGrads() {
  for (Param* p : params())
    if (p->grad.data) zero(p->grad);  // a layout that keeps gradients only during the backward has none now
}

namespace {
std::unique_ptr<Model> buildModel(const ModelConfig& config, std::int64_t batch, Device& device, TensorParallel tp) {
  if (batch < 1) throw UsageError(fmt::format("a micro-batch of {} samples: it must be at least 1", batch));
  auto divides = [&](std::int64_t n, const std::string& what) {
    if (n % tp.ranks)
      throw UsageError(fmt::format("--tp {} does not divide the {} {} of the {} model", tp.ranks, n, what, nameOf(config.kind)));
  };
  switch (config.kind) {
    case ModelKind::kMlp:
      divides(config.width, "hidden features (width)");
      return makeMlp(config, batch, device, tp);
    case ModelKind::kCnn:
      for (auto w : config.widths) divides(w, "channels of a stage (widths)");
      return makeCnn(config, batch, device, tp);
    case ModelKind::kTransformer:
      divides(config.heads, "attention heads");
      return makeTransformer(config, batch, device, tp);
  }
  throw Error("internal: a model kind outside ModelKind");
}
}  // namespace

std::unique_ptr<Model> makeModel(const ModelConfig& config, std::int64_t batch, Device& device, TensorParallel tp,
                                 ParamStorage storage) {
  std::unique_ptr<Model> model = buildModel(config, batch, device, tp);
  model->arena().poolActivations(nullptr);  // what is taken from now on (a pipeline's buffers) is its own
  if (storage == ParamStorage::kMaterialized) materialize(model->params(), model->arena());
  return model;
}

SequentialClassifier::SequentialClassifier(ModelConfig config, std::int64_t batch, Device& device)
    : Model(std::move(config), device), batch_(batch) {
  std::vector<std::int64_t> shape = {batch};
  shape.insert(shape.end(), config_.inputShape.begin(), config_.inputShape.end());
  input_ = arena_.tensor(shape);
}

void SequentialClassifier::finish() {
  if (!layers_.empty()) layers_.front()->skipInputGradient();  // its input is the data
  beginTail();
  loss_ = std::make_unique<CrossEntropy>(arena_, batch_, config_.classes);
}

const Tensor& SequentialClassifier::embed(const data::Batch& batch, StepContext&) {
  if (batch.size() != batch_ || batch.features.size() != input_.numel())
    throw Error(fmt::format("internal: a batch of {} samples ({} values) for a model built for {} ({} values)", batch.size(),
                            batch.features.size(), batch_, input_.numel()));
  if (const std::optional<StagedRows> staged = stagedRows(*input_.device, batch))
    input_.device->copy(input_.data, staged->inputs, batch.features.size() * sizeof(float));
  else
    input_.fromHost(batch.features);
  roundTo(compute_, input_);
  return input_;
}

}  // namespace ts::wl
