#pragma once
// Causal multi-head self-attention of a GPT block over x[B*T, C]: qkv = x Wqkv^T + b (one Linear of 3C
// outputs), heads of D = C/NH, scores q k^T / sqrt(D) with the causal mask, softmax, times v, heads
// merged, output projection. Forward FLOPs: 2(B T C 3C) + 2(B T C C) for the projections and
// 4 B NH T^2 D for the two attention matmuls (counted in full, the convention MFU figures use).
// Tensor parallel (tpRanks > 1): split by heads. This rank holds NH/tp heads: the qkv projection is
// column-parallel over their q, k and v rows, the output projection row-parallel over their channels
// (one sum over the group forward, one backward, both in the projections).
#include <memory>

#include "workloads/layers/layer.h"
#include "workloads/layers/linear.h"
#include "workloads/layers/recompute.h"

namespace ts::wl {

struct AttentionConfig {
  std::int64_t batch = 0, seq = 0;        // x[batch * seq, channels]
  std::int64_t channels = 0, heads = 0;   // the whole layer's
  double initStd = 0.02, projStd = 0.02;  // the N(0, std) weights of the qkv and the output projection
  int tpRank = 0, tpRanks = 1;
  // --recompute selective: the [B, NH, T, T] probabilities and their gradients from this pool (shared with the
  // other blocks), the probabilities recomputed from q and k in the backward. nullptr: this layer's own, kept.
  ActivationPool* scores = nullptr;
};

class CausalSelfAttention final : public Layer {
 public:
  CausalSelfAttention(Arena& arena, const Init& init, const std::string& name, const AttentionConfig& config);
  const Tensor& forward(const Tensor& x, StepContext& ctx) override;
  const Tensor& backward(const Tensor& dy, StepContext& ctx) override;
  void params(std::vector<Param*>& out) override;
  double forwardFlops() const override;
  double rankForwardFlops() const override;  // this rank's heads' (layer.h)
  double recomputedFlops() const override;
  double rankRecomputedFlops() const override;
  void groupSums(LayerSums& out) const override { addSumsOf({&qkv_, &proj_}, out); }

 private:
  std::int64_t B_, T_, C_, NH_, D_;  // C_: this rank's heads' channels (NH_ D_); the model width is the projections'
  std::int64_t fullHeads_;
  bool recomputeScores_;
  Linear qkv_, proj_;
  // [B, NH, T, D] per head (o: att v); att = softmax scores [B, NH, T, T]; merged heads [B*T, C].
  Tensor q_, k_, v_, o_, att_, merged_;
  Tensor do_, dq_, dk_, dv_, datt_, dscores_, dqkv_;
  void scoresForward();                          // att = softmax(q k^T / sqrt(D), causal)
  double scoresFlops(std::int64_t heads) const;  // q k^T of `heads` heads, one forward
};

}  // namespace ts::wl
