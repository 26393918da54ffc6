#include "workloads/layers/dropout.h"

#include "workloads/device_ops.h"

namespace ts::wl {

Dropout::Dropout(Arena& arena, const std::string& name, const DropoutConfig& c)
    : rows_(c.rows), cols_(c.cols), y_(arena.tensor({c.rows, c.cols})), dx_(arena.tensor({c.rows, c.cols})) {
  keys_.seed = c.seed;
  keys_.layer = nameHash(name);
  keys_.rowsPerSample = c.rowsPerSample;
  keys_.colOffset = c.colOffset;
  keys_.p = static_cast<float>(c.p);
}

const Tensor& Dropout::forward(const Tensor& x, StepContext& ctx) {
  identity_ = ctx.evaluating;
  if (identity_) {
    copy(y_, x);
    return y_;
  }
  keys_.step = ctx.step;
  keys_.firstSample = ctx.firstSample;
  ops::dropoutForward(*y_.device, y_.data, x.data, rows_, cols_, keys_);
  return y_;
}

const Tensor& Dropout::backward(const Tensor& dy, StepContext&) {
  if (identity_) {
    copy(dx_, dy);
    return dx_;
  }
  ops::dropoutBackward(*dx_.device, dx_.data, dy.data, rows_, cols_, keys_, ops::Write::kOverwrite);
  return dx_;
}

}  // namespace ts::wl
