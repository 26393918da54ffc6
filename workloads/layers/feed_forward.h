#pragma once
// A transformer's MLP over x[rows, C]: proj(gelu(fc(x))), fc of 4C outputs (GPT-2's). The dense block's (tensor
// parallel: fc column- and proj row-parallel, Megatron's) and each expert's of a mixture of experts (moe.h: whole
// on every rank). Forward FLOPs: 2 * 2 rows C 4C.
#include "workloads/layers/activation.h"
#include "workloads/layers/linear.h"

namespace ts::wl {

struct FeedForwardConfig {
  std::int64_t rows = 0, channels = 0;
  double projStd = 0.02;  // the residual projection's initialisation (GPT-2: 0.02 / sqrt(2 layers))
  int tpRank = 0, tpRanks = 1;
};

class FeedForward final : public Layer {
 public:
  // N(0, 0.02) weights (proj: projStd), zero biases; parameters `name`.fc.* and `name`.proj.*.
  FeedForward(Arena& arena, const Init& init, const std::string& name, const FeedForwardConfig& config);
  const Tensor& forward(const Tensor& x, StepContext& ctx) override {
    return proj_.forward(gelu_.forward(fc_.forward(x, ctx), ctx), ctx);
  }
  const Tensor& backward(const Tensor& dy, StepContext& ctx) override {
    return fc_.backward(gelu_.backward(proj_.backward(dy, ctx), ctx), ctx);
  }
  void params(std::vector<Param*>& out) override {
    fc_.params(out);
    proj_.params(out);
  }
  double forwardFlops() const override { return fc_.forwardFlops() + proj_.forwardFlops(); }
  double rankForwardFlops() const override { return fc_.rankForwardFlops() + proj_.rankForwardFlops(); }
  void groupSums(LayerSums& out) const override { addSumsOf({&fc_, &proj_}, out); }

 private:
  Linear fc_;
  Activation gelu_;
  Linear proj_;
};

}  // namespace ts::wl
