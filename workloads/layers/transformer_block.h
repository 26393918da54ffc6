#pragma once
// A pre-layernorm GPT block over x[B*T, C]: x + attn(ln1(x)), then + mlp(ln2(.)) with mlp = proj(gelu(fc(.)))
// and fc of 4C outputs (feed_forward.h), or with experts a mixture of such MLPs (moe.h: parameters `name`.moe.*); with dropout,
// each branch's output dropped before its residual sum (GPT-2's resid_pdrop: on the whole C features, after the row-parallel
// sums). Forward FLOPs: the attention's plus 2 * 2(B T C 4C) for the MLP. Tensor parallel: the attention split by heads, fc
// column- and proj row-parallel (Megatron's block: two sums forward, two backward); the layernorms are replicated.
#include <memory>

#include "workloads/layers/attention.h"
#include "workloads/layers/dropout.h"
#include "workloads/layers/feed_forward.h"
#include "workloads/layers/moe.h"
#include "workloads/layers/normalization.h"

namespace ts::wl {

struct TransformerBlockConfig {
  std::int64_t batch = 0, seq = 0;  // x[batch * seq, channels]
  std::int64_t channels = 0, heads = 0;
  std::int64_t layers = 1;  // the model's blocks: they scale the residual projections' initialisation
  int tpRank = 0, tpRanks = 1;
  double dropout = 0;                // on each branch's output (0: none)
  std::uint64_t seed = 0;            // the run's: dropout's masks
  ActivationPool* scores = nullptr;  // --recompute selective: the attention's (AttentionConfig::scores)
  MoeSettings moe = {};              // experts: a mixture of experts in place of the MLP
};

class TransformerBlock final : public Layer {
 public:
  // GPT-2 initialisation: N(0, 0.02) weights, the residual projections scaled by 1/sqrt(2 layers).
  TransformerBlock(Arena& arena, const Init& init, const std::string& name, const TransformerBlockConfig& config);
  const Tensor& forward(const Tensor& x, StepContext& ctx) override;
  const Tensor& backward(const Tensor& dy, StepContext& ctx) override;
  void params(std::vector<Param*>& out) override;
  double forwardFlops() const override { return attn_.forwardFlops() + mlp_->forwardFlops(); }
  double rankForwardFlops() const override { return attn_.rankForwardFlops() + mlp_->rankForwardFlops(); }
  double recomputedFlops() const override { return attn_.recomputedFlops(); }
  double rankRecomputedFlops() const override { return attn_.rankRecomputedFlops(); }
  void groupSums(LayerSums& out) const override { addSumsOf({&attn_, mlp_.get()}, out); }
  // The mixture of experts in place of the MLP; null in a dense block.
  const MixtureOfExperts* moe() const { return moe_; }

 private:
  LayerNorm ln1_;
  CausalSelfAttention attn_;
  LayerNorm ln2_;
  std::unique_ptr<Layer> mlp_;  // FeedForward, or MixtureOfExperts (then moe_)
  MixtureOfExperts* moe_ = nullptr;
  std::unique_ptr<Dropout> attnDrop_, mlpDrop_;  // with dropout: on the attention's and the MLP's outputs
  Tensor mid_, out_, dmid_, dx_;
};

}  // namespace ts::wl
