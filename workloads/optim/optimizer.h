#pragma once
// Optimizers over a model's parameters: sgd (momentum, coupled weight decay), adam (L2 decay in the
// gradient), adamw (decoupled decay), rmsprop, lamb (layer-wise trust ratio). Weight decay applies to the
// parameters marked `decay` (weights), never to biases and normalisation gains. The state tensors are
// named after their parameter (PyTorch's exp_avg / exp_avg_sq / momentum_buffer / square_avg) for
// checkpoints.
#include <functional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/enum_names.h"
#include "workloads/layers/layer.h"

namespace ts::wl {

enum class OptimizerKind { kSgd, kAdam, kAdamW, kRmsprop, kLamb };

struct OptimizerOptions {
  OptimizerKind kind = OptimizerKind::kAdamW;
  double weightDecay = 0.0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // adam, adamw, lamb
  double momentum = 0.9;                          // sgd
  double alpha = 0.99;                            // rmsprop
  nlohmann::json toJson() const;
};
void validateOptimizerOptions(const OptimizerOptions& o);  // UsageError naming the flag
// Adam, AdamW and LAMB keep two moments per parameter (exp_avg, exp_avg_sq); SGD and RMSprop one.
bool keepsTwoMoments(OptimizerKind kind);
// The elements of each tensor Optimizer::state() lists for an optimizer of `kind` over `params`, in its order,
// without building one (train --plan: what --average-optimizer averages).
std::vector<std::size_t> optimizerStateElements(OptimizerKind kind, const std::vector<Param*>& params);

class Optimizer {
 public:
  // LAMB's trust ratio is a whole tensor's ||p|| / ||u||. Where this rank holds part of some tensors (ZeRO or
  // parameter-server pieces, tensor-parallel slices), partSums adds, in place, the pairs [sum p^2, sum u^2] of
  // the parameters (entries 2i and 2i + 1 for params[i]) over the ranks that hold the tensors' other parts.
  // Unset: every parameter is a whole tensor.
  using PartSums = std::function<void(std::span<double> sums)>;
  Optimizer(const OptimizerOptions& options, std::vector<Param*> params, Arena& arena, PartSums partSums = {});
  // One update with learning rate lr; t is the 1-based count of updates (Adam's bias correction).
  void step(double lr, int t);
  // The state tensors, each with its parameter and its name after it: "<param>.<suffix>" (checkpoints).
  struct State {
    Param* param;
    const char* suffix;  // "exp_avg", "exp_avg_sq", "momentum_buffer", "square_avg"
    Tensor* tensor;
  };
  std::vector<State> state();

 private:
  struct Slot {
    Param* p;
    Tensor a, b;  // first and second state tensors (unused ones empty)
  };
  OptimizerOptions o_;
  void lambInParts(float lr, int t);
  float decayOf(const Param& p) const;
  std::vector<Slot> slots_;
  Tensor scratch_;  // lamb's per-tensor update (whole tensors only: the parts' pass recomputes it)
  PartSums partSums_;
};

}  // namespace ts::wl

namespace ts {
template <>
struct EnumNames<wl::OptimizerKind> {
  static constexpr std::pair<std::string_view, wl::OptimizerKind> kNames[] = {{"sgd", wl::OptimizerKind::kSgd},
                                                                              {"adam", wl::OptimizerKind::kAdam},
                                                                              {"adamw", wl::OptimizerKind::kAdamW},
                                                                              {"rmsprop", wl::OptimizerKind::kRmsprop},
                                                                              {"lamb", wl::OptimizerKind::kLamb}};
};
}  // namespace ts
