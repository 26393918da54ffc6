// Mixture-of-experts routing on the CPU (cpu_ops.h says what each op computes): the reference the CUDA ops
// (kernels/cuda/moe_routing.cu) are tested against. Each token's work is independent except moeAssign's, whose
// first-come-first-served order is sequential by definition (it is the capacity rule).
#include "kernels/cpu/cpu_ops.h"
#include "kernels/moe_rules.h"

namespace ts::cpu {

void moeTopK(int* expert, float* gate, const float* probs, std::size_t N, std::size_t E, std::size_t k) {
  for (std::size_t n = 0; n < N; ++n) moe::topKOfToken(expert + n * k, gate + n * k, probs + n * E, E, k);
}

void moeAssign(int* slot, int* routed, const int* expert, std::size_t N, std::size_t k, std::size_t E, std::size_t capacity) {
  for (std::size_t e = 0; e < E; ++e) routed[e] = 0;
  for (std::size_t j = 0; j < k; ++j)
    for (std::size_t n = 0; n < N; ++n) {
      const std::size_t a = n * k + j;
      const int e = expert[a];
      const auto taken = static_cast<std::size_t>(routed[e]++);
      slot[a] = taken < capacity ? static_cast<int>(static_cast<std::size_t>(e) * capacity + taken) : -1;
    }
}

void moeDispatch(float* buf, const float* x, const int* slot, std::size_t N, std::size_t k, std::size_t C) {
  for (std::size_t a = 0; a < N * k; ++a) {
    if (slot[a] < 0) continue;
    const float* src = x + (a / k) * C;
    float* dst = buf + static_cast<std::size_t>(slot[a]) * C;
    for (std::size_t c = 0; c < C; ++c) dst[c] = src[c];
  }
}

void moeDispatchBackward(float* dx, const float* dbuf, const int* slot, std::size_t N, std::size_t k, std::size_t C) {
  for (std::size_t n = 0; n < N; ++n) {
    float* d = dx + n * C;
    for (std::size_t c = 0; c < C; ++c) d[c] = 0;
    for (std::size_t j = 0; j < k; ++j) {
      const int s = slot[n * k + j];
      if (s < 0) continue;
      const float* src = dbuf + static_cast<std::size_t>(s) * C;
      for (std::size_t c = 0; c < C; ++c) d[c] += src[c];
    }
  }
}

void moeCombine(float* y, const float* out, const float* gate, const int* slot, std::size_t N, std::size_t k, std::size_t C) {
  for (std::size_t n = 0; n < N; ++n) {
    float* d = y + n * C;
    for (std::size_t c = 0; c < C; ++c) d[c] = 0;
    for (std::size_t j = 0; j < k; ++j) {
      const std::size_t a = n * k + j;
      if (slot[a] < 0) continue;
      const float* src = out + static_cast<std::size_t>(slot[a]) * C;
      for (std::size_t c = 0; c < C; ++c) d[c] += gate[a] * src[c];
    }
  }
}

void moeCombineBackward(float* dout, float* dgate, const float* dy, const float* out, const float* gate, const int* slot,
                        std::size_t N, std::size_t k, std::size_t C) {
  for (std::size_t a = 0; a < N * k; ++a) {
    dgate[a] = 0;
    if (slot[a] < 0) continue;
    const float* g = dy + (a / k) * C;
    const float* o = out + static_cast<std::size_t>(slot[a]) * C;
    float* d = dout + static_cast<std::size_t>(slot[a]) * C;
    double dot = 0;
    for (std::size_t c = 0; c < C; ++c) {
      d[c] = gate[a] * g[c];
      dot += static_cast<double>(g[c]) * o[c];
    }
    dgate[a] = static_cast<float>(dot);
  }
}

void moeGateBackward(float* dprobs, const float* dgate, const float* probs, const int* expert, const float* auxGrad,
                     std::size_t N, std::size_t E, std::size_t k) {
  for (std::size_t n = 0; n < N; ++n) {
    float* d = dprobs + n * E;
    for (std::size_t e = 0; e < E; ++e) d[e] = auxGrad ? auxGrad[e] : 0.0f;
    moe::gateBackwardOfToken(d, dgate + n * k, probs + n * E, expert + n * k, k);
  }
}

}  // namespace ts::cpu
