#include "workloads/layers/recompute.h"

#include <fmt/format.h>

#include "base/error.h"
#include "workloads/mixed_precision.h"

namespace ts::wl {

void ActivationPool::beginUnit() {
  for (Slot& s : slots_) s.used = false;
}

Tensor ActivationPool::tensor(std::vector<std::int64_t> shape) {
  Tensor t{nullptr, std::move(shape), &arena_->device()};
  const std::size_t n = t.numel();
  Slot* best = nullptr;
  for (Slot& s : slots_)
    if (!s.used && s.numel >= n && (!best || s.numel < best->numel)) best = &s;
  if (!best) {
    const Tensor fresh = arena_->own({static_cast<std::int64_t>(n)}, MemoryKind::kActivations);
    best = &slots_.emplace_back(Slot{fresh.data, n, false});
  }
  best->used = true;
  t.data = best->data;
  return t;
}

bool ActivationPool::unitUsed() const {
  for (const Slot& s : slots_)
    if (s.used) return true;
  return false;
}

std::size_t ActivationPool::bytes() const {
  std::size_t n = 0;
  for (const Slot& s : slots_) n += s.numel * sizeof(float);
  return n;
}

PooledActivations::PooledActivations(Arena& arena, ActivationPool& pool) : arena_(arena) {
  pool.beginUnit();
  outer_ = arena_.poolActivations(&pool);
}

PooledActivations::~PooledActivations() { arena_.poolActivations(outer_); }

Recomputed::Recomputed(Arena& arena, RecomputePools& pools, const RecomputedUnit& unit,
                       std::vector<std::unique_ptr<Layer>> layers, const Precision& precision)
    : arena_(&arena), layers_(std::move(layers)), precision_(&precision), inputGradient_(!unit.dataInput) {
  if (layers_.empty()) throw Error("internal: a recomputed unit of no layers");
  if (!unit.kept) {  // another pipeline stage's: only its forward runs here, once, to measure the shapes
    out_ = arena.tensor(unit.outShape, MemoryKind::kActivations);
    inputGradient_ = false;
    return;
  }
  out_ = arena.own(unit.outShape, MemoryKind::kActivations);
  if (unit.dataInput) {
    dx_ = arena.own(unit.inShape, MemoryKind::kActivations);  // zeros, never written
  } else {
    ActivationPool& grads = pools.inputGradients[unit.index % 2];
    grads.beginUnit();
    dx_ = grads.tensor(unit.inShape);
  }
}

const Tensor& Recomputed::runForward(const Tensor& x, StepContext& ctx) {
  const Tensor* y = &x;
  for (auto& l : layers_) {
    y = &l->forward(*y, ctx);
    roundTo(*precision_, *y);
  }
  return *y;
}

const Tensor& Recomputed::forward(const Tensor& x, StepContext& ctx) {
  x_ = &x;
  const Tensor& y = runForward(x, ctx);
  if (y.numel() != out_.numel())
    throw Error(fmt::format("internal: a recomputed unit's output {} for a copy of {}", y.shapeText(), out_.shapeText()));
  copy(out_, Tensor{y.data, out_.shape, y.device});
  return out_;
}

const Tensor& Recomputed::backward(const Tensor& dy, StepContext& ctx) {
  // The forward again, from the kept input, into the shared buffers. Batch norm's running statistics were
  // updated by the first forward (training = false keeps batch statistics and leaves them: as Pipeline's
  // recomputation); dropout draws the same masks, keyed by ctx's step and first sample, the micro-batch's.
  const bool training = ctx.training;
  ctx.training = false;
  runForward(*x_, ctx);
  ctx.training = training;
  const Tensor* d = &dy;
  for (std::size_t i = layers_.size(); i-- > 0;) {
    d = &layers_[i]->backward(*d, ctx);
    roundTo(*precision_, *d);
  }
  if (!inputGradient_) return dx_;
  if (d->numel() != dx_.numel())
    throw Error(fmt::format("internal: a recomputed unit's input gradient {} for a copy of {}", d->shapeText(), dx_.shapeText()));
  copy(dx_, Tensor{d->data, dx_.shape, d->device});
  return dx_;
}

void Recomputed::groupSums(LayerSums& out) const {
  std::vector<const Layer*> layers;
  for (const auto& l : layers_) layers.push_back(l.get());
  LayerSums own;
  addSumsOf(layers, own);
  out.forward.insert(out.forward.end(), own.forward.begin(), own.forward.end());
  out.backward.insert(out.backward.end(), own.forward.begin(), own.forward.end());
  out.backward.insert(out.backward.end(), own.backward.begin(), own.backward.end());
}

void Recomputed::params(std::vector<Param*>& out) {
  for (auto& l : layers_) l->params(out);
}

void Recomputed::buffers(std::vector<NamedTensor>& out) {
  for (auto& l : layers_) l->buffers(out);
}

double Recomputed::sumOver(double (Layer::*flops)() const) const {
  double f = 0;
  for (const auto& l : layers_) f += ((*l).*flops)();
  return f;
}

void Recomputed::skipInputGradient() {
  layers_.front()->skipInputGradient();
  if (!inputGradient_) return;
  // Not built as the data's unit: its input gradient becomes zeros of its own (the shared one is written by others).
  inputGradient_ = false;
  dx_ = arena_->own(dx_.shape, MemoryKind::kActivations);
}

}  // namespace ts::wl
