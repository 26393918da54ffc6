// Mixture-of-experts routing on the CPU (cpu_ops.h says what each op computes): the reference the CUDA ops
// (kernels/cuda/moe_routing.cu) are tested against. Each token's work is independent except moeAssign's, whose
// first-come-first-served order is sequential by definition (it is the capacity rule).
#include "kernels/cpu/cpu_ops.h"

namespace ts::cpu {

void moeTopK(int* expert, float* gate, const float* probs, std::size_t N, std::size_t E, std::size_t k) {
  for (std::size_t n = 0; n < N; ++n) {
    const float* p = probs + n * E;
    int first = 0, second = -1;
    for (std::size_t e = 1; e < E; ++e)  // strictly greater: a tie keeps the lower index
      if (p[e] > p[first]) first = static_cast<int>(e);
    if (k == 2)
      for (std::size_t e = 0; e < E; ++e)
        if (static_cast<int>(e) != first && (second < 0 || p[e] > p[second])) second = static_cast<int>(e);
    expert[n * k] = first;
    if (k == 1) {
      gate[n] = p[first];
      continue;
    }
    expert[n * k + 1] = second;
    const float sum = p[first] + p[second];
    gate[n * k] = p[first] / sum;
    gate[n * k + 1] = p[second] / sum;
  }
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
    const int* chosen = expert + n * k;
    const float* dg = dgate + n * k;
    if (k == 1) {
      d[chosen[0]] += dg[0];
      continue;
    }
    // g_i = p_i / (p_1 + p_2): dL/dp_1 = p_2 (dg_1 - dg_2) / S^2, dL/dp_2 = p_1 (dg_2 - dg_1) / S^2.
    const float p1 = probs[n * E + static_cast<std::size_t>(chosen[0])], p2 = probs[n * E + static_cast<std::size_t>(chosen[1])];
    const float s2 = (p1 + p2) * (p1 + p2);
    d[chosen[0]] += p2 * (dg[0] - dg[1]) / s2;
    d[chosen[1]] += p1 * (dg[1] - dg[0]) / s2;
  }
}

}  // namespace ts::cpu
