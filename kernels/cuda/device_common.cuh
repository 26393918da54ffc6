#pragma once
// What the kernels of kernels/cuda/*.cu share: the launch shapes (launch_shape.h), the grid-stride and
// warp-per-row indices, and the warp and block reductions. Included by .cu files only.
#include <algorithm>
#include <cstddef>

#include "kernels/cuda/launch_shape.h"  // the grids (host)

namespace ts::cuda {

// ---- indices (device) ------------------------------------------------------------------------------------

// Grid-stride loops: for (i = firstIndex(); i < n; i += gridStride()).
__device__ inline std::size_t firstIndex() { return blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; }
__device__ inline std::size_t gridStride() { return static_cast<std::size_t>(gridDim.x) * blockDim.x; }
// The warp-per-row kernels: this warp's first row and the row stride, and the lane.
__device__ inline std::size_t firstRow() {
  return blockIdx.x * static_cast<std::size_t>(blockDim.x / kWarp) + threadIdx.x / kWarp;
}
__device__ inline std::size_t rowStride() { return static_cast<std::size_t>(gridDim.x) * (blockDim.x / kWarp); }
__device__ inline unsigned laneId() { return threadIdx.x % kWarp; }

// ---- reductions (device) ---------------------------------------------------------------------------------

// Butterfly reductions over the 32 lanes of a full warp: every lane gets the result, with the same bits
// (each step combines a commutative pair).
__device__ inline float warpSum(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ inline float warpMax(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ inline double warpSum(double v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
// The sum of v over the block, returned to every thread; blockDim.x a multiple of 32, every thread of the
// block must call it. A fixed order: the same inputs give the same bits on every run.
__device__ inline double blockSum(double v) {
  __shared__ double warpSums[kWarp];
  v = warpSum(v);
  __syncthreads();  // a previous call's readers are done with warpSums
  if (laneId() == 0) warpSums[threadIdx.x / kWarp] = v;
  __syncthreads();
  return warpSum(laneId() < blockDim.x / kWarp ? warpSums[laneId()] : 0.0);
}
// The sum of partial[0 .. count), strided over the block then blockSum: for one-block kernels.
__device__ inline double sumPartials(const double* partial, std::size_t count) {
  double s = 0;
  for (std::size_t i = threadIdx.x; i < count; i += blockDim.x) s += partial[i];
  return blockSum(s);
}

}  // namespace ts::cuda
