// LayerNorm, softmax and batch norm on the GPU (kernels/cpu/normalization.cpp): row and channel reductions,
// memory-bound (read the row or channel, reduce, write it). See cuda_ops.h for the arguments.
//
// Numerics. LayerNorm and softmax reduce in float, one warp per row, and nvcc may contract their
// arithmetic into FMAs: they match the CPU to rounding. Batch norm repeats the CPU's arithmetic step by step
// (float64 statistics, explicit round-to-nearest intrinsics where nvcc would contract), its sums in a fixed
// order: deterministic, and equal to the CPU but for the order of the sums.
#include <algorithm>
#include <cfloat>
#include <string>

#include "base/error.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/device_common.cuh"

namespace ts::cuda {
namespace {

constexpr int kChannelBlock = 512;  // threads per block of the batch-norm kernels (one block per channel)

// ---- layernorm and softmax: one warp per row ----------------------------------------------------------------

// One warp per row of C: reads the row twice (mean, then variance; it is in L1/L2 the second time) and
// writes it once. 4(2NC) bytes of DRAM traffic when C fits in cache.
__global__ void layernormKernel(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b, int N,
                                int C, float eps) {
  const int row = static_cast<int>(firstRow());
  const int lane = static_cast<int>(laneId());
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
__global__ void layernormBackwardInputKernel(float* dinp, const float* dout, const float* inp, const float* w, const float* mean,
                                             const float* rstd, int N, int C) {
  const int row = static_cast<int>(firstRow());
  const int lane = static_cast<int>(laneId());
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
// consecutive columns: coalesced) over slices of kRowsPerSlice rows (blockIdx.y, striding by gridDim.y:
// columnSliceGrid caps it at 65535), adding each slice's partial sums atomically. Reads x and dout once
// more: 8NC bytes.
__global__ void layernormBackwardParamsKernel(float* dweight, float* dbias, const float* dout, const float* inp,
                                              const float* mean, const float* rstd, std::size_t N, std::size_t C) {
  const std::size_t c = firstIndex();
  if (c >= C) return;
  for (std::size_t first = firstSliceRow(blockIdx.y); first < N; first += sliceRowStride(gridDim.y)) {
    const std::size_t last = N - first < kRowsPerSlice ? N : first + kRowsPerSlice;
    float dw = 0, db = 0;
    for (std::size_t row = first; row < last; ++row) {
      const std::size_t i = row * C + c;
      dw += dout[i] * (inp[i] - mean[row]) * rstd[row];
      db += dout[i];
    }
    if (dweight) atomicAdd(dweight + c, dw);
    if (dbias) atomicAdd(dbias + c, db);
  }
}

// One warp per row: max, then sum of exponentials, then the normalised write. With causalT, row r keeps
// columns <= r % causalT and writes zeros after them. Reads the row (twice, cached), writes it once.
__global__ void softmaxKernel(float* out, const float* inp, int rows, int cols, int causalT) {
  const int row = static_cast<int>(firstRow());
  const int lane = static_cast<int>(laneId());
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
  const int row = static_cast<int>(firstRow());
  const int lane = static_cast<int>(laneId());
  if (row >= rows) return;
  const std::size_t off = static_cast<std::size_t>(row) * cols;
  float dot = 0;
  for (int c = lane; c < cols; c += kWarp) dot += dout[off + c] * out[off + c];
  dot = warpSum(dot);
  for (int c = lane; c < cols; c += kWarp) dinp[off + c] += out[off + c] * (dout[off + c] - dot);
}

// ---- batch norm: one block per channel c of x[N, C, HW] --------------------------------------------------

// Visits the N*HW elements of channel c, thread t taking elements t, t + blockDim.x, ... in (n, i) order
// (consecutive threads, consecutive addresses within a plane), calling f with the element's offset
// (n*C + c)*HW + i. Two divisions per thread, none per element.
template <typename F>
__device__ void forChannel(std::size_t N, std::size_t C, std::size_t HW, std::size_t c, F f) {
  const std::size_t count = N * HW;
  if (count == 0) return;
  const std::size_t step = blockDim.x, dn = step / HW, di = step % HW;
  std::size_t n = threadIdx.x / HW, i = threadIdx.x % HW;
  for (std::size_t e = threadIdx.x; e < count; e += step) {
    f((n * C + c) * HW + i);
    n += dn;
    i += di;
    if (i >= HW) {
      i -= HW;
      ++n;
    }
  }
}

// Forward: the channel's mean, then its (biased) variance, in float64, then out = (x - mean) rstd w + b
// in float64 rounded once, as the CPU; mean / rstd / running statistics written by thread 0 (each may be
// null). Reads the channel twice (the second time mostly from L2) and writes it once.
__global__ void batchnormForwardKernel(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                                       const float* bias, std::size_t N, std::size_t C, std::size_t HW, float eps,
                                       float* runningMean, float* runningVar, float momentum) {
  const std::size_t c = blockIdx.x;
  const double count = static_cast<double>(N * HW);
  double s = 0;
  forChannel(N, C, HW, c, [&](std::size_t j) { s += inp[j]; });
  const double m = blockSum(s) / count;
  double v = 0;
  forChannel(N, C, HW, c, [&](std::size_t j) {
    const double d = inp[j] - m;
    v += d * d;
  });
  v = blockSum(v) / count;
  const double r = 1.0 / sqrt(v + static_cast<double>(eps));
  const double w = weight[c], b = bias[c];
  forChannel(N, C, HW, c,
             [&](std::size_t j) { out[j] = static_cast<float>(__dadd_rn(__dmul_rn(__dmul_rn(inp[j] - m, r), w), b)); });
  if (threadIdx.x != 0) return;
  if (mean) mean[c] = static_cast<float>(m);
  if (rstd) rstd[c] = static_cast<float>(r);
  // The CPU's expressions: (1 - momentum) * running is a float product, the rest float64 (not fused).
  const double mom = momentum;
  if (runningMean) runningMean[c] = static_cast<float>(__dadd_rn(__fmul_rn(1 - momentum, runningMean[c]), __dmul_rn(mom, m)));
  if (runningVar)
    runningVar[c] = static_cast<float>(
        __dadd_rn(__fmul_rn(1 - momentum, runningVar[c]), __dmul_rn(__dmul_rn(mom, v), count) / fmax(1.0, count - 1)));
}

// Backward: sum(dy) and sum(dy xhat) over the channel in float64 (dbias, dweight += them, thread 0), then
// dinp += w rstd (dy - mean(dy) - xhat mean(dy xhat)). Reads x and dy twice and dinp once, writes dinp.
__global__ void batchnormBackwardKernel(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                                        const float* weight, const float* mean, const float* rstd, std::size_t N, std::size_t C,
                                        std::size_t HW) {
  const std::size_t c = blockIdx.x;
  const double count = static_cast<double>(N * HW);
  const double m = mean[c], r = rstd[c];
  double sumDy = 0, sumDyXhat = 0;
  forChannel(N, C, HW, c, [&](std::size_t j) {
    sumDy += dout[j];
    sumDyXhat += static_cast<double>(dout[j]) * (inp[j] - m) * r;
  });
  sumDy = blockSum(sumDy);
  sumDyXhat = blockSum(sumDyXhat);
  if (threadIdx.x == 0) {
    if (dbias) dbias[c] += static_cast<float>(sumDy);
    if (dweight) dweight[c] += static_cast<float>(sumDyXhat);
  }
  if (!dinp) return;
  const double meanDy = sumDy / count, meanDyXhat = sumDyXhat / count;
  const double wr = static_cast<double>(weight[c]) * r;
  forChannel(N, C, HW, c, [&](std::size_t j) {
    const double xhat = __dmul_rn(inp[j] - m, r);
    const double g = __dmul_rn(wr, __dsub_rn(dout[j] - meanDy, __dmul_rn(xhat, meanDyXhat)));
    dinp[j] = __fadd_rn(dinp[j], static_cast<float>(g));
  });
}

}  // namespace

void layernormForward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                      std::size_t N, std::size_t C, cudaStream_t s, float eps) {
  const int rows = intExtent("layernorm rows", N), cols = intExtent("layernorm columns", C);
  layernormKernel<<<everyRowGrid(N), kBlock, 0, s>>>(out, mean, rstd, inp, weight, bias, rows, cols, eps);
  CUDA_CHECK(cudaGetLastError());
}
void layernormBackward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight,
                       const float* mean, const float* rstd, std::size_t N, std::size_t C, cudaStream_t s) {
  if (N == 0 || C == 0) return;
  if (dinp) {
    const int rows = intExtent("layernorm rows", N), cols = intExtent("layernorm columns", C);
    layernormBackwardInputKernel<<<everyRowGrid(N), kBlock, 0, s>>>(dinp, dout, inp, weight, mean, rstd, rows, cols);
    CUDA_CHECK(cudaGetLastError());
  }
  if (dweight || dbias) {
    const ColumnSliceGrid g = columnSliceGrid(N, C);
    layernormBackwardParamsKernel<<<dim3(g.x, g.y), kBlock, 0, s>>>(dweight, dbias, dout, inp, mean, rstd, N, C);
    CUDA_CHECK(cudaGetLastError());
  }
}
void softmaxBackward(float* dinp, const float* dout, const float* out, std::size_t rows, std::size_t cols, cudaStream_t s) {
  softmaxBackwardKernel<<<everyRowGrid(rows), kBlock, 0, s>>>(dinp, dout, out, intExtent("softmax rows", rows),
                                                              intExtent("softmax columns", cols));
  CUDA_CHECK(cudaGetLastError());
}
void softmaxForward(float* out, const float* inp, std::size_t rows, std::size_t cols, std::size_t causalT, cudaStream_t s) {
  softmaxKernel<<<everyRowGrid(rows), kBlock, 0, s>>>(
      out, inp, intExtent("softmax rows", rows), intExtent("softmax columns", cols), intExtent("softmax causal length", causalT));
  CUDA_CHECK(cudaGetLastError());
}

namespace {
// y = (x - running mean) w / sqrt(running var + eps) + b: one thread per element, each channel's two
// factors recomputed (two loads and a sqrt: cheaper than a pass to precompute them).
__global__ void batchnormInferenceKernel(float* out, const float* inp, const float* weight, const float* bias,
                                         const float* runningMean, const float* runningVar, std::size_t C, std::size_t HW,
                                         std::size_t n, float eps) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t c = (i / HW) % C;
    const float scale = weight[c] / sqrtf(runningVar[c] + eps);
    out[i] = (inp[i] - runningMean[c]) * scale + bias[c];
  }
}
}  // namespace

void batchnormInference(float* out, const float* inp, const float* weight, const float* bias, const float* runningMean,
                        const float* runningVar, std::size_t N, std::size_t C, std::size_t HW, float eps, cudaStream_t stream) {
  const std::size_t n = N * C * HW;
  if (n == 0) return;
  constexpr unsigned kThreads = 256;
  const auto blocks = static_cast<unsigned>(std::min<std::size_t>((n + kThreads - 1) / kThreads, 65535));
  batchnormInferenceKernel<<<blocks, kThreads, 0, stream>>>(out, inp, weight, bias, runningMean, runningVar, C, HW, n, eps);
  CUDA_CHECK(cudaGetLastError());
}

void batchnormForward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                      std::size_t N, std::size_t C, std::size_t HW, float eps, float* runningMean, float* runningVar,
                      float momentum, cudaStream_t stream) {
  if (C == 0) return;
  if (C > std::size_t{0x7fffffff})
    throw UsageError("batchnormForward: " + std::to_string(C) + " channels is too many for one block each");
  batchnormForwardKernel<<<static_cast<unsigned>(C), kChannelBlock, 0, stream>>>(out, mean, rstd, inp, weight, bias, N, C, HW,
                                                                                 eps, runningMean, runningVar, momentum);
  CUDA_CHECK(cudaGetLastError());
}
void batchnormBackward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight,
                       const float* mean, const float* rstd, std::size_t N, std::size_t C, std::size_t HW, cudaStream_t stream) {
  if (C == 0) return;
  if (C > std::size_t{0x7fffffff})
    throw UsageError("batchnormBackward: " + std::to_string(C) + " channels is too many for one block each");
  batchnormBackwardKernel<<<static_cast<unsigned>(C), kChannelBlock, 0, stream>>>(dinp, dweight, dbias, dout, inp, weight, mean,
                                                                                  rstd, N, C, HW);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace ts::cuda
