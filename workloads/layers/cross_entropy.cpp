#include "workloads/layers/cross_entropy.h"

#include <fmt/format.h>

#include "base/error.h"
#include "kernels/cpu/ops.h"

namespace ts::wl {

CrossEntropy::CrossEntropy(Arena& arena, std::int64_t rows, std::int64_t classes)
    : rows_(rows), classes_(classes), losses_(arena.tensor({rows})), dlogits_(arena.tensor({rows, classes})) {}

double CrossEntropy::forward(const Tensor& logits, const std::int32_t* targets) {
  for (std::int64_t i = 0; i < rows_; ++i)
    if (targets[i] < 0 || targets[i] >= classes_)
      throw UsageError(fmt::format("a target of {} is outside the model's {} classes: the data does not fit the model", targets[i], classes_));
  cpu::crossEntropyForwardBackward(losses_.data, dlogits_.data, logits.data, targets, rows_, classes_, 1.0f / static_cast<float>(rows_));
  double sum = 0;
  for (std::int64_t i = 0; i < rows_; ++i) sum += losses_.data[i];
  return sum / static_cast<double>(rows_);
}

const Tensor& CrossEntropy::backward(float scale) {
  if (scale != 1.0f) cpu::scale(dlogits_.data, scale, dlogits_.numel());
  return dlogits_;
}

}  // namespace ts::wl
