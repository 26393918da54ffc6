#include "workloads/layers/linear.h"

#include <cmath>

#include "workloads/ops.h"

namespace ts::wl {

Linear::Linear(Arena& arena, const Init& init, const std::string& name, std::int64_t rows, std::int64_t in, std::int64_t out, bool bias,
               double initStd)
    : rows_(rows), in_(in), out_(out), hasBias_(bias), w_(makeParam(arena, name + ".weight", {out, in})),
      y_(arena.tensor({rows, out})), dx_(arena.tensor({rows, in})) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(in));
  if (initStd < 0) init.uniform(w_.value, w_.name, bound);
  else init.normal(w_.value, w_.name, initStd);
  if (hasBias_) {
    b_ = makeParam(arena, name + ".bias", {out}, false);
    if (initStd < 0) init.uniform(b_.value, b_.name, bound);  // else zeros, as GPT-2 does
  }
}

const Tensor& Linear::forward(const Tensor& x, StepContext&) {
  x_ = &x;
  const int N = static_cast<int>(rows_), I = static_cast<int>(in_), O = static_cast<int>(out_);
  ops::gemm(*y_.device, false, true, N, O, I, 1.0f, x.data, I, w_.value.data, I, 0.0f, y_.data, O);
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
  ops::gemm(*y_.device, false, false, N, I, O, 1.0f, dy.data, O, w_.value.data, I, 0.0f, dx_.data, I);  // dx = dy W
  return dx_;
}

void Linear::params(std::vector<Param*>& out) {
  out.push_back(&w_);
  if (hasBias_) out.push_back(&b_);
}

}  // namespace ts::wl
