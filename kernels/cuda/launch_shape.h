#pragma once
// The launch shapes of kernels/cuda's kernels: threads per block, and grids for n elements, rows or row
// slices, never empty and within CUDA's limits (grid.x at most 2^31 - 1 blocks, grid.y and grid.z at most
// 65535), a kernel striding over what a capped grid does not cover. Plain C++, without CUDA's headers,
// so that CPU tests hold every shape to those limits (tests/unit/test_launch_shapes.cpp); the kernels
// include it through device_common.cuh.
#include <algorithm>
#include <cstddef>
#include <string>

#include "base/error.h"

// What the kernels and the host both call (nvcc compiles it for both; g++ sees plain functions).
#if defined(__CUDACC__)
#define TS_HOST_DEVICE __host__ __device__
#else
#define TS_HOST_DEVICE
#endif

namespace ts::cuda {

constexpr int kWarp = 32;
constexpr int kBlock = 256;  // threads per block of the elementwise and row kernels
constexpr int kWarpsPerBlock = kBlock / kWarp;
constexpr std::size_t kMaxGridX = 0x7fffffff;  // CUDA's limit on gridDim.x
constexpr std::size_t kMaxGridYZ = 65535;      // and on gridDim.y, gridDim.z
constexpr std::size_t kMaxGrid = 65535u * 4;   // blocks of a grid-stride launch
constexpr std::size_t kReduceBlocks = 1024;    // partial sums of a reduction (256K threads: fills an H100)
constexpr std::size_t kRowsPerSlice = 256;     // rows one thread of a column-sum kernel adds before its atomicAdd

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
// A warp for every row, for the kernels whose warp handles one row and returns: the rows an int indexes
// (intExtent) need at most 2^28 blocks, within grid.x.
inline unsigned everyRowGrid(std::size_t rows) { return cappedGrid(rows, kWarpsPerBlock, kMaxGridX); }
inline unsigned reduceGrid(std::size_t n) { return cappedGrid(n, kBlock, kReduceBlocks); }
// 32-bit index arithmetic (cheaper divisions) where every index, and index + grid stride, stays below 2^32.
inline bool fits32(std::size_t n) { return n <= std::size_t{0x7fffffff}; }
// A row or column count as the int the row kernels index with: UsageError (naming `what`) past
// kMaxIntExtent, where an index would wrap (the last block's warps count a few rows past the end before
// they return) and a row be skipped or written out of bounds.
constexpr std::size_t kMaxIntExtent = 0x7fffffff - kBlock;
inline int intExtent(const char* what, std::size_t n) {
  if (n > kMaxIntExtent)
    throw UsageError(std::string(what) + ": " + std::to_string(n) + " exceeds what the kernel's int index reaches (at most " +
                     std::to_string(kMaxIntExtent) + ")");
  return static_cast<int>(n);
}

// The column sums (dbias, layernorm's dweight and dbias): a thread per column along x, slices of
// kRowsPerSlice rows down y. y is capped at 65535: past 65535 slices (16.7 M rows) the kernel's slice loop
// strides by gridDim.y (firstSliceRow / sliceRowStride) instead of the launch failing.
struct ColumnSliceGrid {
  unsigned x = 1, y = 1;
};
inline ColumnSliceGrid columnSliceGrid(std::size_t rows, std::size_t cols) {
  return {cappedGrid(cols, kBlock, kMaxGridX), cappedGrid(rows, kRowsPerSlice, kMaxGridYZ)};
}
// The first row of block row `blockY`'s first slice, and the rows from one of its slices to its next.
TS_HOST_DEVICE inline std::size_t firstSliceRow(unsigned blockY) { return static_cast<std::size_t>(blockY) * kRowsPerSlice; }
TS_HOST_DEVICE inline std::size_t sliceRowStride(unsigned gridY) { return static_cast<std::size_t>(gridY) * kRowsPerSlice; }

}  // namespace ts::cuda
