#pragma once
// Dropout on x[rows, cols] while training (identity when evaluating): each element kept with probability
// 1 - p and scaled by 1 / (1 - p). The masks are keyed by the run's seed, this layer's name, the step, the
// element's sample (StepContext::firstSample on; `rowsPerSample` rows each: a language model's tokens) and its
// global feature (`colOffset` + column: a tensor-parallel slice's place in the whole), so every layout draws
// the same mask for the same element (kernels/cpu/dropout.cpp). The backward recomputes the mask.
#include <cstdint>
#include <string>

#include "kernels/cpu/cpu_ops.h"
#include "workloads/layers/layer.h"

namespace ts::wl {

struct DropoutConfig {
  std::uint64_t seed = 0;  // the run's
  double p = 0;            // the drop probability
  std::int64_t rows = 0, cols = 0;
  std::int64_t rowsPerSample = 1, colOffset = 0;
};

class Dropout final : public Layer {
 public:
  Dropout(Arena& arena, const std::string& name, const DropoutConfig& config);
  const Tensor& forward(const Tensor& x, StepContext& ctx) override;
  const Tensor& backward(const Tensor& dy, StepContext& ctx) override;

 private:
  std::int64_t rows_, cols_;
  cpu::DropoutKeys keys_;  // the last forward's (its backward's mask)
  bool identity_ = false;  // the last forward was an evaluation's
  Tensor y_, dx_;
};

}  // namespace ts::wl
