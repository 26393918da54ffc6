#include "workloads/layers/linear.h"

#include <cmath>

#include "workloads/device_ops.h"

namespace ts::wl {

namespace {

// This rank's output rows (column split) and input columns (row split) of a [out, in] weight.
std::vector<std::int64_t> heldRows(const TensorSplit& s, std::int64_t out) {
  if (s.kind != TensorSplit::kColumn || !s.split()) return {};
  if (!s.rows.empty()) return s.rows;
  std::vector<std::int64_t> rows;
  const std::int64_t n = out / s.ranks;
  for (std::int64_t r = s.rank * n; r < (s.rank + 1) * n; ++r) rows.push_back(r);
  return rows;
}

}  // namespace

Linear::Linear(Arena& arena, const Init& init, const std::string& name, const LinearConfig& config)
    : rows_(config.rows), fullIn_(config.in), fullOut_(config.out), hasBias_(config.bias), split_(config.split) {
  const std::int64_t rows = config.rows, in = config.in, out = config.out;
  const double initStd = config.initStd;
  const TensorSplit& split = config.split;
  const std::vector<std::int64_t> held = heldRows(split, out);
  const bool column = split.split() && split.kind == TensorSplit::kColumn, row = split.split() && split.kind == TensorSplit::kRow;
  out_ = column ? static_cast<std::int64_t>(held.size()) : out;
  in_ = row ? in / split.ranks : in;
  // The slice of the one-device weights this rank holds.
  const TensorSlice ws{{out, in}, out, in, held, row ? split.rank * in_ : 0, row ? (split.rank + 1) * in_ : in};
  const double bound = 1.0 / std::sqrt(static_cast<double>(in));
  w_ = makeParam(arena, name + ".weight", {out_, in_}, true, initStd < 0 ? init.uniform(bound) : init.normal(initStd),
                 column || row ? ws : TensorSlice{});
  y_ = arena.tensor({rows, out_});
  dx_ = arena.tensor({rows, in_});
  if (hasBias_)  // zeros under initStd, as GPT-2 does
    b_ = makeParam(arena, name + ".bias", {out_}, false, initStd < 0 ? init.uniform(bound) : ParamInit{},
                   column ? TensorSlice{{out}, out, 1, held, 0, 1} : TensorSlice{});
}

const Tensor& Linear::forward(const Tensor& x, StepContext& ctx) {
  x_ = &x;
  const int N = static_cast<int>(rows_), I = static_cast<int>(in_), O = static_cast<int>(out_);
  ops::gemm(*y_.device, false, true, N, O, I, 1.0f, x.data, I, w_.value.data, I, 0.0f, y_.data, O);
  if (split_.split() && split_.kind == TensorSplit::kRow) ctx.sumOverTensorParallel(y_);  // partial sums over the input slices
  if (hasBias_) ops::biasAdd(*y_.device, y_.data, y_.data, b_.value.data, rows_, out_);
  return y_;
}

const Tensor& Linear::backward(const Tensor& dy, StepContext& ctx) {
  const int N = static_cast<int>(rows_), I = static_cast<int>(in_), O = static_cast<int>(out_);
  ops::gemm(*y_.device, true, false, O, I, N, 1.0f, dy.data, O, x_->data, I, 1.0f, w_.grad.data, I);  // dW += dy^T x
  ctx.ready(w_);
  if (hasBias_) {
    ops::biasBackward(*y_.device, b_.grad.data, dy.data, rows_, out_);
    ctx.ready(b_);
  }
  if (!inputGradient_) return dx_;
  ops::gemm(*y_.device, false, false, N, I, O, 1.0f, dy.data, O, w_.value.data, I, 0.0f, dx_.data, I);  // dx = dy W
  if (split_.split() && split_.kind == TensorSplit::kColumn) ctx.sumOverTensorParallel(dx_);  // each rank's outputs' share
  return dx_;
}

void Linear::groupSums(LayerSums& out) const { addSplitSums(split_, inputGradient_, y_.numel(), dx_.numel(), out); }

void Linear::params(std::vector<Param*>& out) {
  out.push_back(&w_);
  if (hasBias_) out.push_back(&b_);
}

}  // namespace ts::wl
