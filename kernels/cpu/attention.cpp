// Causal scaled dot-product attention, the unfused reference: per (batch, head) the full T x T score
// matrix (GEMM), the causal softmax, and the weighted sum of values (GEMM). A fused kernel (cuDNN's, or a
// flash-style one) must match it.
#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_ops.h"

namespace ts::cpu {

void attentionForward(float* out, const float* q, const float* k, const float* v, int B, int NH, int T, int D) {
  std::vector<float> scores(static_cast<std::size_t>(T) * T), probs(scores.size());
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  for (int bh = 0; bh < B * NH; ++bh) {
    const std::size_t off = static_cast<std::size_t>(bh) * T * D;
    gemm(false, true, T, T, D, scale, q + off, D, k + off, D, 0.0f, scores.data(), T);
    softmaxForward(probs.data(), scores.data(), T, T, T);
    gemm(false, false, T, D, T, 1.0f, probs.data(), T, v + off, D, 0.0f, out + off, D);
  }
}

void headsFromRows(float* heads, const float* rows, int B, int T, int NH, int D, int col0, int W) {
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        const float* src = rows + (static_cast<std::size_t>(b) * T + t) * W + col0 + h * D;
        float* dst = heads + ((static_cast<std::size_t>(b) * NH + h) * T + t) * D;
        for (int d = 0; d < D; ++d) dst[d] = src[d];
      }
}

void rowsFromHeads(float* rows, const float* heads, int B, int T, int NH, int D, int col0, int W) {
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int t = 0; t < T; ++t) {
        const float* src = heads + ((static_cast<std::size_t>(b) * NH + h) * T + t) * D;
        float* dst = rows + (static_cast<std::size_t>(b) * T + t) * W + col0 + h * D;
        for (int d = 0; d < D; ++d) dst[d] = src[d];
      }
}

}  // namespace ts::cpu
