#include "workloads/layers/normalization.h"

#include "workloads/device_ops.h"

namespace ts::wl {

LayerNorm::LayerNorm(Arena& arena, const std::string& name, std::int64_t rows, std::int64_t channels)
    : rows_(rows),
      channels_(channels),
      w_(makeParam(arena, name + ".weight", {channels}, false, Init::constant(1.0f))),
      b_(makeParam(arena, name + ".bias", {channels}, false)),
      y_(arena.tensor({rows, channels})),
      mean_(arena.tensor({rows})),
      rstd_(arena.tensor({rows})),
      dx_(arena.tensor({rows, channels})) {}

const Tensor& LayerNorm::forward(const Tensor& x, StepContext&) {
  x_ = &x;
  ops::layernormForward(*y_.device, y_.data, mean_.data, rstd_.data, x.data, w_.value.data, b_.value.data, rows_, channels_);
  return y_;
}

const Tensor& LayerNorm::backward(const Tensor& dy, StepContext& ctx) {
  zero(dx_);
  ops::layernormBackward(*y_.device, dx_.data, w_.grad.data, b_.grad.data, dy.data, x_->data, w_.value.data, mean_.data,
                         rstd_.data, rows_, channels_);
  ctx.ready(w_);
  ctx.ready(b_);
  return dx_;
}

void LayerNorm::params(std::vector<Param*>& out) {
  out.push_back(&w_);
  out.push_back(&b_);
}

BatchNorm2d::BatchNorm2d(Arena& arena, const std::string& name, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w,
                         ConvLayout layout, TensorSlice slice)
    : name_(name),
      n_(n),
      c_(c),
      hw_(h * w),
      layout_(layout),
      w_(makeParam(arena, name + ".weight", {c}, false, Init::constant(1.0f), slice)),
      b_(makeParam(arena, name + ".bias", {c}, false, {}, slice)),
      // Model state, not a pass's: their own memory even when a recomputed unit's activations are shared
      // (--recompute full), where each block's batch norms must keep their own statistics.
      runningMean_(arena.state({c})),
      runningVar_(arena.state({c})),
      slice_(std::move(slice)),
      y_(arena.tensor(imageShape(n, c, h, w, layout))),
      mean_(arena.tensor({c})),
      rstd_(arena.tensor({c})),
      dx_(arena.tensor(imageShape(n, c, h, w, layout))) {
  Init(0).constant(runningVar_, 1.0f);
}

const Tensor& BatchNorm2d::forward(const Tensor& x, StepContext& ctx) {
  x_ = &x;
  if (ctx.evaluating) {
    ops::batchnormInference(*y_.device, y_.data, x.data, w_.value.data, b_.value.data, runningMean_.data, runningVar_.data, n_,
                            c_, hw_, layout_);
    if (relu_) ops::reluForward(*y_.device, y_.data, y_.data, y_.numel());
    return y_;
  }
  ops::batchnormForward(*y_.device, y_.data, mean_.data, rstd_.data, x.data, w_.value.data, b_.value.data, n_, c_, hw_,
                        ctx.training ? runningMean_.data : nullptr, ctx.training ? runningVar_.data : nullptr,
                        ctx.bnSum ? &ctx.bnSum : nullptr, relu_, layout_);
  return y_;
}

const Tensor& BatchNorm2d::backward(const Tensor& dy, StepContext& ctx) {
  ops::batchnormBackward(*y_.device, dx_.data, w_.grad.data, b_.grad.data, dy.data, x_->data, w_.value.data, mean_.data,
                         rstd_.data, n_, c_, hw_, ops::Write::kOverwrite, ctx.bnSum ? &ctx.bnSum : nullptr, layout_);
  ctx.ready(w_);
  ctx.ready(b_);
  return dx_;
}

void BatchNorm2d::groupSums(LayerSums& out) const {
  const auto c = static_cast<std::size_t>(c_);
  out.forward.insert(out.forward.end(), {{SumGroup::kBatchNorm, c + 1}, {SumGroup::kBatchNorm, c}});
  out.backward.push_back({SumGroup::kBatchNorm, 2 * c + 1});
}

void BatchNorm2d::params(std::vector<Param*>& out) {
  out.push_back(&w_);
  out.push_back(&b_);
}

}  // namespace ts::wl

namespace ts::wl {
void BatchNorm2d::buffers(std::vector<NamedTensor>& out) {
  out.push_back({name_ + ".running_mean", &runningMean_, slice_});
  out.push_back({name_ + ".running_var", &runningVar_, slice_});
}
}  // namespace ts::wl
