#include "workloads/layers/dropout.h"

#include "workloads/device_ops.h"

namespace ts::wl {

Dropout::Dropout(Arena& arena, const std::string& name, std::uint64_t seed, double p, std::int64_t rows, std::int64_t cols,
                 std::int64_t rowsPerSample, std::int64_t colOffset)
    : rows_(rows), cols_(cols), y_(arena.tensor({rows, cols})), dx_(arena.tensor({rows, cols})) {
  keys_.seed = seed;
  keys_.layer = nameHash(name);
  keys_.rowsPerSample = rowsPerSample;
  keys_.colOffset = colOffset;
  keys_.p = static_cast<float>(p);
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
