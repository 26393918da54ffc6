// Pooling (global average, max) and token/position embeddings on the GPU (kernels/cpu/pooling_and_embedding.cpp):
// gathers and scatters rather than arithmetic. See cuda_ops.h for the arguments.
//
// Numerics. Each kernel repeats the CPU's arithmetic (explicit round-to-nearest intrinsics where nvcc would
// contract): bit-equal, except where it adds with atomics (maxPool2dBackward, the dwte rows of
// embeddingBackward), whose order, and so the last bits, vary from run to run.
#include <algorithm>
#include <cfloat>
#include <climits>
#include <cstdint>
#include <string>

#include "base/error.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/device_common.cuh"

namespace ts::cuda {
namespace {

// out[nc] = mean of the HW values of plane nc (float64 sum), one warp per plane. Reads N*C*HW, writes N*C.
__global__ void globalAvgPoolForwardKernel(float* out, const float* inp, std::size_t planes, std::size_t HW) {
  for (std::size_t nc = firstRow(); nc < planes; nc += rowStride()) {
    const float* x = inp + nc * HW;
    double s = 0;
    for (std::size_t i = laneId(); i < HW; i += kWarp) s += x[i];
    s = warpSum(s);
    if (laneId() == 0) out[nc] = static_cast<float>(s / static_cast<double>(HW));
  }
}
// dinp[nc, i] += dout[nc] / HW (a float division, as the CPU), one warp per plane. Reads N*C + 2 N*C*HW, writes N*C*HW.
__global__ void globalAvgPoolBackwardKernel(float* dinp, const float* dout, std::size_t planes, std::size_t HW) {
  for (std::size_t nc = firstRow(); nc < planes; nc += rowStride()) {
    const float g = __fdiv_rn(dout[nc], static_cast<float>(HW));
    float* d = dinp + nc * HW;
    for (std::size_t i = laneId(); i < HW; i += kWarp) d[i] = __fadd_rn(d[i], g);
  }
}

// One thread per output (nc, p, q) of the k x k window: the first valid cell, then strictly larger ones win
// (the CPU's scan order and tie rule); padded cells never win; -FLT_MAX and -1 when no cell is valid.
// Reads k*k input values per output (cached), writes the output and its argmax (an int offset into inp).
template <typename I>
__global__ void maxPool2dForwardKernel(float* out, int* argmax, const float* inp, I count, int H, int W, int P, int Q, int k,
                                       int stride, int pad) {
  for (I o = static_cast<I>(firstIndex()); o < count; o += static_cast<I>(gridStride())) {
    const int q = static_cast<int>(o % static_cast<I>(Q));
    const int p = static_cast<int>((o / static_cast<I>(Q)) % static_cast<I>(P));
    const int nc = static_cast<int>(o / (static_cast<I>(Q) * static_cast<I>(P)));
    float best = -FLT_MAX;
    int at = -1;
    for (int r = 0; r < k; ++r)
      for (int s = 0; s < k; ++s) {
        const int h = p * stride - pad + r, w = q * stride - pad + s;
        if (h < 0 || h >= H || w < 0 || w >= W) continue;
        const int j = (nc * H + h) * W + w;  // < N*C*H*W <= INT_MAX (checked by the caller)
        if (at < 0 || inp[j] > best) {
          best = inp[j];
          at = j;
        }
      }
    out[o] = best;
    argmax[o] = at;
  }
}
// dinp[argmax[o]] += dout[o] where argmax[o] >= 0; windows overlap when stride < k, hence atomicAdd.
// Reads the outputs and their argmax, one atomic add per output.
__global__ void maxPool2dBackwardKernel(float* dinp, const float* dout, const int* argmax, std::size_t count) {
  for (std::size_t o = firstIndex(); o < count; o += gridStride()) {
    const int a = argmax[o];
    if (a >= 0) atomicAdd(dinp + a, dout[o]);
  }
}

// out[row] = wte[tokens[row]] + wpe[row % T], one warp per row of C. Reads 2 rows (+1 token), writes one.
__global__ void embeddingForwardKernel(float* out, const int* tokens, const float* wte, const float* wpe, std::size_t rows,
                                       std::size_t T, std::size_t C) {
  for (std::size_t row = firstRow(); row < rows; row += rowStride()) {
    const float* e = wte + static_cast<std::size_t>(tokens[row]) * C;
    const float* p = wpe + (row % T) * C;
    float* o = out + row * C;
    for (std::size_t c = laneId(); c < C; c += kWarp) o[c] = __fadd_rn(e[c], p[c]);
  }
}
// dwte[tokens[row]] += dout[row], one warp per row, atomicAdd (rows may share a token). Reads B*T rows of
// dout (+1 token each), C atomic adds per row.
__global__ void embeddingBackwardWteKernel(float* dwte, const float* dout, const int* tokens, std::size_t rows, std::size_t C) {
  for (std::size_t row = firstRow(); row < rows; row += rowStride()) {
    float* e = dwte + static_cast<std::size_t>(tokens[row]) * C;
    const float* g = dout + row * C;
    for (std::size_t c = laneId(); c < C; c += kWarp) atomicAdd(e + c, g[c]);
  }
}
// dwpe[t, c] += dout[b, t, c] for b = 0 .. B-1 in that order, one thread per (t, c): the CPU's order of
// additions, so bit-equal and deterministic, without atomics. Reads B*T*C + T*C, writes T*C.
__global__ void embeddingBackwardWpeKernel(float* dwpe, const float* dout, std::size_t B, std::size_t TC) {
  for (std::size_t k = firstIndex(); k < TC; k += gridStride()) {
    float acc = dwpe[k];
    for (std::size_t b = 0; b < B; ++b) acc = __fadd_rn(acc, dout[b * TC + k]);
    dwpe[k] = acc;
  }
}

}  // namespace

void globalAvgPoolForward(float* out, const float* inp, std::size_t N, std::size_t C, std::size_t HW, cudaStream_t stream) {
  if (N * C == 0) return;
  globalAvgPoolForwardKernel<<<rowGrid(N * C), kBlock, 0, stream>>>(out, inp, N * C, HW);
  CUDA_CHECK(cudaGetLastError());
}
void globalAvgPoolBackward(float* dinp, const float* dout, std::size_t N, std::size_t C, std::size_t HW, cudaStream_t stream) {
  if (N * C == 0 || HW == 0) return;
  globalAvgPoolBackwardKernel<<<rowGrid(N * C), kBlock, 0, stream>>>(dinp, dout, N * C, HW);
  CUDA_CHECK(cudaGetLastError());
}

void maxPool2dForward(float* out, int* argmax, const float* inp, int N, int C, int H, int W, int k, int stride, int pad,
                      cudaStream_t stream) {
  if (N <= 0 || C <= 0) return;
  if (stride <= 0) throw UsageError("maxPool2dForward: stride must be positive (got " + std::to_string(stride) + ")");
  const int P = (H + 2 * pad - k) / stride + 1, Q = (W + 2 * pad - k) / stride + 1;  // the CPU's formula
  if (P <= 0 || Q <= 0) return;
  if (std::size_t(N) * std::size_t(C) * std::size_t(std::max(H, 0)) * std::size_t(std::max(W, 0)) > std::size_t{INT_MAX})
    throw UsageError("maxPool2dForward: the input has more than INT_MAX elements; argmax is an int offset");
  const std::size_t count = std::size_t(N) * C * P * Q;
  if (fits32(count))
    maxPool2dForwardKernel<std::uint32_t><<<elementGrid(count), kBlock, 0, stream>>>(
        out, argmax, inp, static_cast<std::uint32_t>(count), H, W, P, Q, k, stride, pad);
  else
    maxPool2dForwardKernel<std::size_t>
        <<<elementGrid(count), kBlock, 0, stream>>>(out, argmax, inp, count, H, W, P, Q, k, stride, pad);
  CUDA_CHECK(cudaGetLastError());
}
void maxPool2dBackward(float* dinp, const float* dout, const int* argmax, std::size_t outCount, cudaStream_t stream) {
  if (outCount == 0) return;
  maxPool2dBackwardKernel<<<elementGrid(outCount), kBlock, 0, stream>>>(dinp, dout, argmax, outCount);
  CUDA_CHECK(cudaGetLastError());
}

void embeddingForward(float* out, const int* tokens, const float* wte, const float* wpe, std::size_t B, std::size_t T,
                      std::size_t C, cudaStream_t stream) {
  if (B * T == 0 || C == 0) return;
  embeddingForwardKernel<<<rowGrid(B * T), kBlock, 0, stream>>>(out, tokens, wte, wpe, B * T, T, C);
  CUDA_CHECK(cudaGetLastError());
}
void embeddingBackward(float* dwte, float* dwpe, const float* dout, const int* tokens, std::size_t B, std::size_t T,
                       std::size_t C, cudaStream_t stream) {
  if (B * T == 0 || C == 0) return;
  if (dwte) {
    embeddingBackwardWteKernel<<<rowGrid(B * T), kBlock, 0, stream>>>(dwte, dout, tokens, B * T, C);
    CUDA_CHECK(cudaGetLastError());
  }
  if (dwpe) {
    embeddingBackwardWpeKernel<<<elementGrid(T * C), kBlock, 0, stream>>>(dwpe, dout, B, T * C);
    CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace ts::cuda
