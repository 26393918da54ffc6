// Causal scaled dot-product attention, the unfused reference: per (batch, head) the full T x T score
// matrix (GEMM), the causal softmax, and the weighted sum of values (GEMM). A fused kernel (cuDNN's, or a
// flash-style one) must match it.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/parallel_chunks.h"
#include "kernels/cpu/threads.h"

namespace ts::cpu {

// Heads whole to the compute threads, each with its own score and probability matrices, as the batched GEMM
// gives its matrices (gemm.cpp, issue #40): a head's two GEMMs and softmax then run on one thread, with no
// hand-off between threads inside them.
void attentionForward(float* out, const float* q, const float* k, const float* v, int B, int NH, int T, int D) {
  const std::size_t tt = static_cast<std::size_t>(T) * T;
  // A pair per thread that may run a head: the compute threads, or the team of an enclosing parallel region
  // (where parallelEach runs the heads on the calling thread, whose index is in that team).
  const auto slots = static_cast<std::size_t>(std::max(computeThreads(), detail::threadCount()));
  std::vector<float> scratch(2 * tt * slots);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  parallelEach(static_cast<std::size_t>(B) * NH, [&](std::size_t bh) {
    float* scores = scratch.data() + 2 * tt * static_cast<std::size_t>(detail::threadIndex());
    float* probs = scores + tt;
    const std::size_t off = bh * T * D;
    gemm(false, true, T, T, D, scale, q + off, D, k + off, D, 0.0f, scores, T);
    softmaxForward(probs, scores, T, T, T);
    gemm(false, false, T, D, T, 1.0f, probs, T, v + off, D, 0.0f, out + off, D);
  });
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
