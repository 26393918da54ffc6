#pragma once
// Softmax cross-entropy over logits[N, V] with integer targets[N], fused: the forward computes the mean
// loss and the gradient of it in one pass over the logits (reads N V, writes N V).
#include "workloads/layers/layer.h"

namespace ts::wl {

class CrossEntropy {
 public:
  CrossEntropy(Arena& arena, std::int64_t rows, std::int64_t classes);
  // Mean loss over the rows; keeps dlogits = d(mean loss)/dlogits. `targets` are on the host (checked
  // there: UsageError for one outside [0, V)); `deviceTargets`, when given, are the same values already
  // on the device (a staged batch), else the host ones are copied there.
  double forward(const Tensor& logits, const std::int32_t* targets, const std::int32_t* deviceTargets = nullptr);
  // d(scale * mean loss)/dlogits.
  const Tensor& backward(float scale);

 private:
  std::int64_t rows_, classes_;
  Tensor losses_, dlogits_;
  int* targets_ = nullptr;  // on the device
};

}  // namespace ts::wl
