// Mixture-of-experts routing on the GPU: the CPU's ops (kernels/cpu/moe_routing.cpp, cpu_ops.h says what each
// computes) step by step, one thread per token or per (row, feature) element, so that the routing decisions (top-k,
// the capacity's first come first served) are the CPU's exactly: the same comparisons on the same probabilities.
// moeAssign runs one thread per expert, each walking the assignments in priority order (it is sequential by
// definition: E threads of N k steps, small beside the experts' GEMMs). No atomics: every output is written by one
// thread, so the results are deterministic.
#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/device_common.cuh"
#include "kernels/moe_rules.h"

namespace ts::cuda {
namespace {

__global__ void topKKernel(int* expert, float* gate, const float* probs, std::size_t N, std::size_t E, std::size_t k) {
  for (std::size_t n = firstIndex(); n < N; n += gridStride())
    moe::topKOfToken(expert + n * k, gate + n * k, probs + n * E, E, k);
}

__global__ void assignKernel(int* slot, int* routed, const int* expert, std::size_t N, std::size_t k, std::size_t E,
                             std::size_t capacity) {
  for (std::size_t e = firstIndex(); e < E; e += gridStride()) {
    std::size_t taken = 0;
    for (std::size_t j = 0; j < k; ++j)
      for (std::size_t n = 0; n < N; ++n) {
        const std::size_t a = n * k + j;
        if (static_cast<std::size_t>(expert[a]) != e) continue;
        slot[a] = taken < capacity ? static_cast<int>(e * capacity + taken) : -1;
        ++taken;
      }
    routed[e] = static_cast<int>(taken);
  }
}

__global__ void dispatchKernel(float* buf, const float* x, const int* slot, std::size_t N, std::size_t k, std::size_t C) {
  for (std::size_t i = firstIndex(); i < N * k * C; i += gridStride()) {
    const std::size_t a = i / C, c = i % C;
    if (slot[a] >= 0) buf[static_cast<std::size_t>(slot[a]) * C + c] = x[(a / k) * C + c];
  }
}

__global__ void dispatchBackwardKernel(float* dx, const float* dbuf, const int* slot, std::size_t N, std::size_t k,
                                       std::size_t C) {
  for (std::size_t i = firstIndex(); i < N * C; i += gridStride()) {
    const std::size_t n = i / C, c = i % C;
    float d = 0;
    for (std::size_t j = 0; j < k; ++j) {
      const int s = slot[n * k + j];
      if (s >= 0) d = __fadd_rn(d, dbuf[static_cast<std::size_t>(s) * C + c]);
    }
    dx[i] = d;
  }
}

__global__ void combineKernel(float* y, const float* out, const float* gate, const int* slot, std::size_t N, std::size_t k,
                              std::size_t C) {
  for (std::size_t i = firstIndex(); i < N * C; i += gridStride()) {
    const std::size_t n = i / C, c = i % C;
    float d = 0;
    for (std::size_t j = 0; j < k; ++j) {
      const std::size_t a = n * k + j;
      if (slot[a] >= 0) d = __fadd_rn(d, __fmul_rn(gate[a], out[static_cast<std::size_t>(slot[a]) * C + c]));
    }
    y[i] = d;
  }
}

// One thread per assignment: its row of dout and its gate's gradient (a float64 dot product in the CPU's order).
__global__ void combineBackwardKernel(float* dout, float* dgate, const float* dy, const float* out, const float* gate,
                                      const int* slot, std::size_t N, std::size_t k, std::size_t C) {
  for (std::size_t a = firstIndex(); a < N * k; a += gridStride()) {
    dgate[a] = 0;
    if (slot[a] < 0) continue;
    const float* g = dy + (a / k) * C;
    const float* o = out + static_cast<std::size_t>(slot[a]) * C;
    float* d = dout + static_cast<std::size_t>(slot[a]) * C;
    double dot = 0;
    for (std::size_t c = 0; c < C; ++c) {
      d[c] = __fmul_rn(gate[a], g[c]);
      dot = __dadd_rn(dot, __dmul_rn(static_cast<double>(g[c]), static_cast<double>(o[c])));
    }
    dgate[a] = static_cast<float>(dot);
  }
}

__global__ void gateBackwardKernel(float* dprobs, const float* dgate, const float* probs, const int* expert, const float* auxGrad,
                                   std::size_t N, std::size_t E, std::size_t k) {
  for (std::size_t n = firstIndex(); n < N; n += gridStride()) {
    float* d = dprobs + n * E;
    for (std::size_t e = 0; e < E; ++e) d[e] = auxGrad ? auxGrad[e] : 0.0f;
    moe::gateBackwardOfToken(d, dgate + n * k, probs + n * E, expert + n * k, k);
  }
}

}  // namespace

void moeTopK(int* expert, float* gate, const float* probs, std::size_t N, std::size_t E, std::size_t k, cudaStream_t s) {
  if (N == 0) return;
  topKKernel<<<elementGrid(N), kBlock, 0, s>>>(expert, gate, probs, N, E, k);
  CUDA_CHECK(cudaGetLastError());
}
void moeAssign(int* slot, int* routed, const int* expert, std::size_t N, std::size_t k, std::size_t E, std::size_t capacity,
               cudaStream_t s) {
  assignKernel<<<elementGrid(E), kBlock, 0, s>>>(slot, routed, expert, N, k, E, capacity);
  CUDA_CHECK(cudaGetLastError());
}
void moeDispatch(float* buf, const float* x, const int* slot, std::size_t N, std::size_t k, std::size_t C, cudaStream_t s) {
  if (N * k * C == 0) return;
  dispatchKernel<<<elementGrid(N * k * C), kBlock, 0, s>>>(buf, x, slot, N, k, C);
  CUDA_CHECK(cudaGetLastError());
}
void moeDispatchBackward(float* dx, const float* dbuf, const int* slot, std::size_t N, std::size_t k, std::size_t C,
                         cudaStream_t s) {
  if (N * C == 0) return;
  dispatchBackwardKernel<<<elementGrid(N * C), kBlock, 0, s>>>(dx, dbuf, slot, N, k, C);
  CUDA_CHECK(cudaGetLastError());
}
void moeCombine(float* y, const float* out, const float* gate, const int* slot, std::size_t N, std::size_t k, std::size_t C,
                cudaStream_t s) {
  if (N * C == 0) return;
  combineKernel<<<elementGrid(N * C), kBlock, 0, s>>>(y, out, gate, slot, N, k, C);
  CUDA_CHECK(cudaGetLastError());
}
void moeCombineBackward(float* dout, float* dgate, const float* dy, const float* out, const float* gate, const int* slot,
                        std::size_t N, std::size_t k, std::size_t C, cudaStream_t s) {
  if (N * k == 0) return;
  combineBackwardKernel<<<elementGrid(N * k), kBlock, 0, s>>>(dout, dgate, dy, out, gate, slot, N, k, C);
  CUDA_CHECK(cudaGetLastError());
}
void moeGateBackward(float* dprobs, const float* dgate, const float* probs, const int* expert, const float* auxGrad,
                     std::size_t N, std::size_t E, std::size_t k, cudaStream_t s) {
  if (N == 0) return;
  gateBackwardKernel<<<elementGrid(N), kBlock, 0, s>>>(dprobs, dgate, probs, expert, auxGrad, N, E, k);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace ts::cuda
