// The own CUDA kernels, each written to be near the memory bound (one read and one write of the data,
// reductions in registers and warp shuffles), each commented with what it moves.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/ops.h"

namespace ts::cuda {
namespace {

constexpr int kWarp = 32;
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2/pi)

__device__ float warpSum(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ float warpMax(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

unsigned gridFor(std::size_t n, int block) { return static_cast<unsigned>((n + block - 1) / block); }

// One warp per row of C: reads the row twice (mean, then variance; it is in L1/L2 the second time) and
// writes it once. 4(2NC) bytes of DRAM traffic when C fits in cache.
__global__ void layernormKernel(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b, int N, int C, float eps) {
  const int row = blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= N) return;
  const float* x = inp + static_cast<std::size_t>(row) * C;
  float s = 0;
  for (int c = lane; c < C; c += kWarp) s += x[c];
  const float m = warpSum(s) / C;
  float v = 0;
  for (int c = lane; c < C; c += kWarp) v += (x[c] - m) * (x[c] - m);
  const float r = rsqrtf(warpSum(v) / C + eps);
  float* y = out + static_cast<std::size_t>(row) * C;
  for (int c = lane; c < C; c += kWarp) y[c] = (x[c] - m) * r * w[c] + b[c];
  if (lane == 0) {
    if (mean) mean[row] = m;
    if (rstd) rstd[row] = r;
  }
}

// Backward, part 1 - dinp, one warp per row: dinp += rstd (dnorm - mean(dnorm) - xhat mean(dnorm xhat)) with
// dnorm = dout * w. Reads x, dout, dinp (and w), writes dinp: 16NC bytes.
__global__ void layernormBackwardInputKernel(float* dinp, const float* dout, const float* inp, const float* w, const float* mean, const float* rstd,
                                             int N, int C) {
  const int row = blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= N) return;
  const std::size_t off = static_cast<std::size_t>(row) * C;
  const float m = mean[row], r = rstd[row];
  float sumD = 0, sumDX = 0;
  for (int c = lane; c < C; c += kWarp) {
    const float dn = dout[off + c] * w[c];
    sumD += dn;
    sumDX += dn * (inp[off + c] - m) * r;
  }
  const float meanD = warpSum(sumD) / C, meanDX = warpSum(sumDX) / C;
  for (int c = lane; c < C; c += kWarp) {
    const float xhat = (inp[off + c] - m) * r;
    dinp[off + c] += r * (dout[off + c] * w[c] - meanD - xhat * meanDX);
  }
}

// Backward, part 2 - dweight and dbias, sums over rows: each thread owns one column (consecutive threads,
// consecutive columns: coalesced) over a slice of kRowsPerSlice rows, and adds its partial sums atomically.
// Reads x and dout once more: 8NC bytes.
constexpr int kRowsPerSlice = 256;
__global__ void layernormBackwardParamsKernel(float* dweight, float* dbias, const float* dout, const float* inp, const float* mean, const float* rstd,
                                              int N, int C) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  const int first = blockIdx.y * kRowsPerSlice, last = min(N, first + kRowsPerSlice);
  float dw = 0, db = 0;
  for (int row = first; row < last; ++row) {
    const std::size_t i = static_cast<std::size_t>(row) * C + c;
    dw += dout[i] * (inp[i] - mean[row]) * rstd[row];
    db += dout[i];
  }
  if (dweight) atomicAdd(dweight + c, dw);
  if (dbias) atomicAdd(dbias + c, db);
}

// One warp per row: max, then sum of exponentials, then the normalised write. With causalT, row r keeps
// columns <= r % causalT and writes zeros after them. Reads the row (twice, cached), writes it once.
__global__ void softmaxKernel(float* out, const float* inp, int rows, int cols, int causalT) {
  const int row = blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= rows) return;
  const int valid = causalT ? min(cols, row % causalT + 1) : cols;
  const float* x = inp + static_cast<std::size_t>(row) * cols;
  float mx = -FLT_MAX;
  for (int c = lane; c < valid; c += kWarp) mx = fmaxf(mx, x[c]);
  mx = warpMax(mx);
  float s = 0;
  for (int c = lane; c < valid; c += kWarp) s += expf(x[c] - mx);
  const float inv = 1.0f / warpSum(s);
  float* y = out + static_cast<std::size_t>(row) * cols;
  for (int c = lane; c < cols; c += kWarp) y[c] = c < valid ? expf(x[c] - mx) * inv : 0.0f;
}

// dinp += y (dout - <dout, y>), one warp per row: reads y, dout, dinp; writes dinp (16 bytes per element).
__global__ void softmaxBackwardKernel(float* dinp, const float* dout, const float* out, int rows, int cols) {
  const int row = blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= rows) return;
  const std::size_t off = static_cast<std::size_t>(row) * cols;
  float dot = 0;
  for (int c = lane; c < cols; c += kWarp) dot += dout[off + c] * out[off + c];
  dot = warpSum(dot);
  for (int c = lane; c < cols; c += kWarp) dinp[off + c] += out[off + c] * (dout[off + c] - dot);
}

// Elementwise, grid-stride: one read and one write per element (8 bytes).
__global__ void geluKernel(float* out, const float* inp, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float x = inp[i];
    out[i] = 0.5f * x * (1.0f + tanhf(kGeluScale * (x + 0.044715f * x * x * x)));
  }
}

// dinp += gelu'(x) * dout: reads x, dout, dinp; writes dinp (16 bytes per element).
__global__ void geluBackwardKernel(float* dinp, const float* inp, const float* dout, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float x = inp[i];
    const float t = tanhf(kGeluScale * (x + 0.044715f * x * x * x));
    const float grad = 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kGeluScale * (1.0f + 3.0f * 0.044715f * x * x);
    dinp[i] += grad * dout[i];
  }
}

__global__ void biasAddKernel(float* out, const float* inp, const float* bias, std::size_t N, std::size_t C) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < N * C; i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[i] = inp[i] + bias[i % C];
}

__global__ void residualAddKernel(float* out, const float* a, const float* b, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[i] = a[i] + b[i];
}

// One warp per row of V logits: max and sum of exponentials, the loss, and the gradient written in the
// same pass over the row. Reads N*V, writes N*V (+N losses).
__global__ void crossEntropyKernel(float* losses, float* dlogits, const float* logits, const int* targets, int N, int V, float dloss) {
  const int row = blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= N) return;
  const float* z = logits + static_cast<std::size_t>(row) * V;
  float mx = -FLT_MAX;
  for (int v = lane; v < V; v += kWarp) mx = fmaxf(mx, z[v]);
  mx = warpMax(mx);
  float s = 0;
  for (int v = lane; v < V; v += kWarp) s += expf(z[v] - mx);
  s = warpSum(s);
  const int t = targets[row];
  if (losses && lane == 0) losses[row] = logf(s) - (z[t] - mx);
  if (dlogits) {
    const float inv = 1.0f / s;
    for (int v = lane; v < V; v += kWarp) dlogits[static_cast<std::size_t>(row) * V + v] = (expf(z[v] - mx) * inv - (v == t ? 1.0f : 0.0f)) * dloss;
  }
}

// AdamW: reads params, grads, m, v and writes params, m, v (28 bytes per parameter).
__global__ void adamwKernel(float* p, const float* g, float* m, float* v, std::size_t n, float lr, float b1, float b2, float eps, float wd,
                            float c1, float c2) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float mi = b1 * m[i] + (1 - b1) * g[i];
    const float vi = b2 * v[i] + (1 - b2) * g[i] * g[i];
    m[i] = mi;
    v[i] = vi;
    p[i] -= lr * ((mi / c1) / (sqrtf(vi / c2) + eps) + wd * p[i]);
  }
}

// Multi-tensor AdamW: blockIdx.y picks the tensor of the group, blockIdx.x strides over its elements;
// the same 28 bytes per parameter as above, one launch for up to kMultiTensorGroup tensors.
constexpr int kMultiTensorGroup = 48;  // 48 x 40-byte descriptors: within the 4 KiB of kernel parameters
struct AdamwGroup {
  cpu::AdamwTensor t[kMultiTensorGroup];
};
__global__ void adamwMultiKernel(AdamwGroup group, float lr, float b1, float b2, float eps, float wd, float c1, float c2) {
  const cpu::AdamwTensor& x = group.t[blockIdx.y];
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < x.n; i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float g = x.grads[i];
    const float mi = b1 * x.m[i] + (1 - b1) * g;
    const float vi = b2 * x.v[i] + (1 - b2) * g * g;
    x.m[i] = mi;
    x.v[i] = vi;
    x.params[i] -= lr * ((mi / c1) / (sqrtf(vi / c2) + eps) + wd * x.params[i]);
  }
}

__global__ void sgdKernel(float* p, const float* g, float* buf, std::size_t n, float lr, float mu, float wd) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float gi = g[i] + wd * p[i];
    buf[i] = mu * buf[i] + gi;
    p[i] -= lr * buf[i];
  }
}

__global__ void toBf16Kernel(std::uint16_t* out, const float* inp, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[i] = __bfloat16_as_ushort(__float2bfloat16_rn(inp[i]));
}

__global__ void toHalfKernel(std::uint16_t* out, const float* inp, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[i] = __half_as_ushort(__float2half_rn(inp[i]));
}

__global__ void fromBf16Kernel(float* out, const std::uint16_t* inp, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[i] = __bfloat162float(__ushort_as_bfloat16(inp[i]));
}

__global__ void fromHalfKernel(float* out, const std::uint16_t* inp, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[i] = __half2float(__ushort_as_half(inp[i]));
}

constexpr int kBlock = 256;
constexpr unsigned kMaxGrid = 65535u * 4;
unsigned elementGrid(std::size_t n) { return std::max(1u, std::min(gridFor(n, kBlock), kMaxGrid)); }  // never an empty grid (n = 0)
unsigned rowGrid(std::size_t rows) { return std::max(1u, gridFor(rows, kBlock / kWarp)); }

}  // namespace

void layernormForward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias, std::size_t N, std::size_t C,
                      cudaStream_t s, float eps) {
  layernormKernel<<<rowGrid(N), kBlock, 0, s>>>(out, mean, rstd, inp, weight, bias, static_cast<int>(N), static_cast<int>(C), eps);
  CUDA_CHECK(cudaGetLastError());
}
void layernormBackward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight, const float* mean,
                       const float* rstd, std::size_t N, std::size_t C, cudaStream_t s) {
  if (N == 0 || C == 0) return;
  if (dinp) {
    layernormBackwardInputKernel<<<rowGrid(N), kBlock, 0, s>>>(dinp, dout, inp, weight, mean, rstd, static_cast<int>(N), static_cast<int>(C));
    CUDA_CHECK(cudaGetLastError());
  }
  if (dweight || dbias) {
    const dim3 grid(gridFor(C, kBlock), gridFor(N, kRowsPerSlice));
    layernormBackwardParamsKernel<<<grid, kBlock, 0, s>>>(dweight, dbias, dout, inp, mean, rstd, static_cast<int>(N), static_cast<int>(C));
    CUDA_CHECK(cudaGetLastError());
  }
}
void softmaxBackward(float* dinp, const float* dout, const float* out, std::size_t rows, std::size_t cols, cudaStream_t s) {
  softmaxBackwardKernel<<<rowGrid(rows), kBlock, 0, s>>>(dinp, dout, out, static_cast<int>(rows), static_cast<int>(cols));
  CUDA_CHECK(cudaGetLastError());
}
void softmaxForward(float* out, const float* inp, std::size_t rows, std::size_t cols, std::size_t causalT, cudaStream_t s) {
  softmaxKernel<<<rowGrid(rows), kBlock, 0, s>>>(out, inp, static_cast<int>(rows), static_cast<int>(cols), static_cast<int>(causalT));
  CUDA_CHECK(cudaGetLastError());
}
void geluForward(float* out, const float* inp, std::size_t n, cudaStream_t s) {
  geluKernel<<<elementGrid(n), kBlock, 0, s>>>(out, inp, n);
  CUDA_CHECK(cudaGetLastError());
}
void geluBackward(float* dinp, const float* inp, const float* dout, std::size_t n, cudaStream_t s) {
  geluBackwardKernel<<<elementGrid(n), kBlock, 0, s>>>(dinp, inp, dout, n);
  CUDA_CHECK(cudaGetLastError());
}
void biasAdd(float* out, const float* inp, const float* bias, std::size_t N, std::size_t C, cudaStream_t s) {
  biasAddKernel<<<elementGrid(N * C), kBlock, 0, s>>>(out, inp, bias, N, C);
  CUDA_CHECK(cudaGetLastError());
}
void residualAdd(float* out, const float* a, const float* b, std::size_t n, cudaStream_t s) {
  residualAddKernel<<<elementGrid(n), kBlock, 0, s>>>(out, a, b, n);
  CUDA_CHECK(cudaGetLastError());
}
void crossEntropyForwardBackward(float* losses, float* dlogits, const float* logits, const int* targets, std::size_t N, std::size_t V, float dloss,
                                 cudaStream_t s) {
  crossEntropyKernel<<<rowGrid(N), kBlock, 0, s>>>(losses, dlogits, logits, targets, static_cast<int>(N), static_cast<int>(V), dloss);
  CUDA_CHECK(cudaGetLastError());
}
void adamwUpdate(float* params, const float* grads, float* m, float* v, std::size_t n, float lr, float beta1, float beta2, float eps, float weightDecay,
                 int t, cudaStream_t s) {
  const float c1 = 1.0f - powf(beta1, static_cast<float>(t)), c2 = 1.0f - powf(beta2, static_cast<float>(t));
  adamwKernel<<<elementGrid(n), kBlock, 0, s>>>(params, grads, m, v, n, lr, beta1, beta2, eps, weightDecay, c1, c2);
  CUDA_CHECK(cudaGetLastError());
}
void adamwUpdateMulti(const cpu::AdamwTensor* tensors, std::size_t count, float lr, float beta1, float beta2, float eps, float weightDecay, int t,
                      cudaStream_t s) {
  const float c1 = 1.0f - powf(beta1, static_cast<float>(t)), c2 = 1.0f - powf(beta2, static_cast<float>(t));
  for (std::size_t first = 0; first < count; first += kMultiTensorGroup) {
    AdamwGroup group{};
    const std::size_t n = std::min<std::size_t>(kMultiTensorGroup, count - first);
    std::size_t largest = 0;
    for (std::size_t i = 0; i < n; ++i) {
      group.t[i] = tensors[first + i];
      largest = std::max(largest, tensors[first + i].n);
    }
    if (largest == 0) continue;
    // Blocks enough for the largest tensor; the smaller ones' blocks stride out early.
    const dim3 grid(std::min<unsigned>(gridFor(largest, kBlock), 4096u), static_cast<unsigned>(n));
    adamwMultiKernel<<<grid, kBlock, 0, s>>>(group, lr, beta1, beta2, eps, weightDecay, c1, c2);
    CUDA_CHECK(cudaGetLastError());
  }
}
void sgdMomentumUpdate(float* params, const float* grads, float* momentum, std::size_t n, float lr, float mu, float weightDecay, cudaStream_t s) {
  sgdKernel<<<elementGrid(n), kBlock, 0, s>>>(params, grads, momentum, n, lr, mu, weightDecay);
  CUDA_CHECK(cudaGetLastError());
}
void castToBFloat16(std::uint16_t* out, const float* inp, std::size_t n, cudaStream_t s) {
  toBf16Kernel<<<elementGrid(n), kBlock, 0, s>>>(out, inp, n);
  CUDA_CHECK(cudaGetLastError());
}
void castToHalf(std::uint16_t* out, const float* inp, std::size_t n, cudaStream_t s) {
  toHalfKernel<<<elementGrid(n), kBlock, 0, s>>>(out, inp, n);
  CUDA_CHECK(cudaGetLastError());
}
void castFromBFloat16(float* out, const std::uint16_t* inp, std::size_t n, cudaStream_t s) {
  fromBf16Kernel<<<elementGrid(n), kBlock, 0, s>>>(out, inp, n);
  CUDA_CHECK(cudaGetLastError());
}
void castFromHalf(float* out, const std::uint16_t* inp, std::size_t n, cudaStream_t s) {
  fromHalfKernel<<<elementGrid(n), kBlock, 0, s>>>(out, inp, n);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace ts::cuda
