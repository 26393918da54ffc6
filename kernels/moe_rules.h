#pragma once
// The per-token rules of mixture-of-experts routing that the CPU ops (kernels/cpu/moe_routing.cpp) and the CUDA
// kernels (kernels/cuda/moe_routing.cu) both apply, written once so that the two make the same decisions by
// construction (a tie to the lower index, the same operations on the same floats: none is a multiply-add that nvcc
// could contract), not by a mirrored copy.
#include <cstddef>

#include "kernels/cuda/launch_shape.h"  // TS_HOST_DEVICE: plain C++ for g++

namespace ts::moe {

// Token's probabilities p[E]: its k (1 or 2) most probable experts into expert[k] (strictly greater wins, so a tie
// keeps the lower index) and their gates into gate[k]: p for k = 1 (Switch), p renormalised over the two (Mixtral).
TS_HOST_DEVICE inline void topKOfToken(int* expert, float* gate, const float* p, std::size_t E, std::size_t k) {
  int first = 0, second = -1;
  for (std::size_t e = 1; e < E; ++e)
    if (p[e] > p[first]) first = static_cast<int>(e);
  if (k == 2)
    for (std::size_t e = 0; e < E; ++e)
      if (static_cast<int>(e) != first && (second < 0 || p[e] > p[second])) second = static_cast<int>(e);
  expert[0] = first;
  if (k == 1) {
    gate[0] = p[first];
    return;
  }
  expert[1] = second;
  const float sum = p[first] + p[second];
  gate[0] = p[first] / sum;
  gate[1] = p[second] / sum;
}

// Token's gradient on its probabilities d[E] from its gates' dg[k] (chosen: its experts), added to what d holds
// (the auxiliary loss's share). g_i = p_i / (p_1 + p_2): dL/dp_1 = p_2 (dg_1 - dg_2) / S^2, and symmetrically.
TS_HOST_DEVICE inline void gateBackwardOfToken(float* d, const float* dg, const float* p, const int* chosen, std::size_t k) {
  if (k == 1) {
    d[chosen[0]] += dg[0];
    return;
  }
  const float p1 = p[chosen[0]], p2 = p[chosen[1]];
  const float s2 = (p1 + p2) * (p1 + p2);
  d[chosen[0]] += p2 * (dg[0] - dg[1]) / s2;
  d[chosen[1]] += p1 * (dg[1] - dg[0]) / s2;
}

}  // namespace ts::moe
