#include "workloads/layers/activation.h"

#include <fmt/format.h>

#include "base/error.h"
#include "workloads/device_ops.h"

namespace ts::wl {

Activation::Activation(Arena& arena, ActivationKind kind, std::vector<std::int64_t> shape)
    : kind_(kind), y_(arena.tensor(shape)), dx_(arena.tensor(shape)) {}

const Tensor& Activation::forward(const Tensor& x, StepContext&) {
  x_ = &x;
  if (kind_ == ActivationKind::kRelu)
    ops::reluForward(*y_.device, y_.data, x.data, x.numel());
  else
    ops::geluForward(*y_.device, y_.data, x.data, x.numel());
  return y_;
}

const Tensor& Activation::backward(const Tensor& dy, StepContext&) {
  if (kind_ == ActivationKind::kRelu) {
    ops::reluBackward(*y_.device, dx_.data, x_->data, dy.data, dy.numel(), ops::Write::kOverwrite);
  } else {
    zero(dx_);
    ops::geluBackward(*y_.device, dx_.data, x_->data, dy.data, dy.numel());
  }
  return dx_;
}

}  // namespace ts::wl
