#include "workloads/layers/cross_entropy.h"

#include <fmt/format.h>

#include "base/error.h"
#include "workloads/device_ops.h"

namespace ts::wl {

CrossEntropy::CrossEntropy(Arena& arena, std::int64_t rows, std::int64_t classes)
    : rows_(rows),
      classes_(classes),
      losses_(arena.tensor({rows})),
      dlogits_(arena.tensor({rows, classes})),
      targets_(arena.ints(static_cast<std::size_t>(rows))) {}

double CrossEntropy::forward(const Tensor& logits, const std::int32_t* targets, const std::int32_t* deviceTargets) {
  for (std::int64_t i = 0; i < rows_; ++i)
    if (targets[i] < 0 || targets[i] >= classes_)
      throw UsageError(
          fmt::format("a target of {} is outside the model's {} classes: the data does not fit the model", targets[i], classes_));
  Device& d = *losses_.device;
  const std::size_t bytes = static_cast<std::size_t>(rows_) * sizeof(int);
  if (deviceTargets)
    d.copy(targets_, deviceTargets, bytes);
  else
    d.upload(targets_, targets, bytes);
  ops::crossEntropyForwardBackward(d, losses_.data, dlogits_.data, logits.data, targets_, rows_, classes_,
                                   1.0f / static_cast<float>(rows_));
  double sum = 0;
  for (float l : losses_.toHost()) sum += l;
  return sum / static_cast<double>(rows_);
}

const Tensor& CrossEntropy::backward(float scale) {
  if (scale != 1.0f) ops::scale(*dlogits_.device, dlogits_.data, scale, dlogits_.numel());
  return dlogits_;
}

}  // namespace ts::wl
