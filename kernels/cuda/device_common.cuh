#pragma once
// What the kernels of kernels/cuda/*.cu share: the launch shapes (threads per block, grids for n elements
// or rows, never empty and capped where the kernel strides), the grid-stride and warp-per-row indices, and
// the warp and block reductions. Included by .cu files only.
#include <algorithm>
#include <cstddef>

namespace ts::cuda {

constexpr int kWarp = 32;
constexpr int kBlock = 256;  // threads per block of the elementwise and row kernels
constexpr int kWarpsPerBlock = kBlock / kWarp;
constexpr std::size_t kMaxGrid = 65535u * 4;  // blocks of a grid-stride launch
constexpr std::size_t kReduceBlocks = 1024;   // partial sums of a reduction (256K threads: fills an H100)

// ---- grids (host) ----------------------------------------------------------------------------------------

inline std::size_t ceilDiv(std::size_t n, std::size_t d) { return (n + d - 1) / d; }
// Blocks of `perBlock` threads (or rows, or columns) for n: the exact count, possibly 0.
inline unsigned blocksFor(std::size_t n, std::size_t perBlock) { return static_cast<unsigned>(ceilDiv(n, perBlock)); }
// The same between 1 (never an empty grid) and cap; a kernel launched on it strides over the rest.
inline unsigned cappedGrid(std::size_t work, std::size_t perBlock, std::size_t cap) {
  return static_cast<unsigned>(std::clamp<std::size_t>(ceilDiv(work, perBlock), 1, cap));
}
inline unsigned elementGrid(std::size_t n) { return cappedGrid(n, kBlock, kMaxGrid); }  // grid-stride over n elements
inline unsigned rowGrid(std::size_t rows) {
  return cappedGrid(rows, kWarpsPerBlock, kMaxGrid);
}  // a warp per row, striding over rows
// A warp for every row, uncapped: for the kernels whose warp handles one row and returns.
inline unsigned everyRowGrid(std::size_t rows) { return std::max(1u, blocksFor(rows, kWarpsPerBlock)); }
inline unsigned reduceGrid(std::size_t n) { return cappedGrid(n, kBlock, kReduceBlocks); }
// 32-bit index arithmetic (cheaper divisions) where every index, and index + grid stride, stays below 2^32.
inline bool fits32(std::size_t n) { return n <= std::size_t{0x7fffffff}; }

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
