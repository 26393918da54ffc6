// The CUDA kernels' launch shapes (kernels/cuda/launch_shape.h), checked on the CPU: every grid is within
// CUDA's limits (grid.x at most 2^31 - 1, grid.y and grid.z at most 65535) for sizes up to what the
// kernels' indices reach, never empty, and a capped grid's stride still reaches every row. Issue #33:
// layernormBackward's column sums launched ceil(rows / 256) blocks down y, past 65535 above 16.7 M rows.
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "base/error.h"
#include "kernels/cuda/launch_shape.h"

namespace ts::cuda {
namespace {

// The sizes at and around every limit: a grid's edge, 65535 slices, the int index's end.
std::vector<std::size_t> edgeSizes() {
  std::vector<std::size_t> out = {0, 1, 7, 8, 255, 256, 257};
  for (std::size_t edge : {kMaxGridYZ * kRowsPerSlice, kMaxGrid * kBlock, std::size_t{1} << 32, kMaxIntExtent})
    for (std::size_t d : {std::size_t{0}, std::size_t{1}}) {
      out.push_back(edge - d);
      out.push_back(edge + d);
    }
  return out;
}

TEST(LaunchShapes, EveryGridIsWithinCudasLimitsAndNeverEmpty) {
  for (std::size_t n : edgeSizes()) {
    for (unsigned blocks : {elementGrid(n), rowGrid(n), reduceGrid(n)}) {
      EXPECT_GE(blocks, 1u) << n;
      EXPECT_LE(blocks, kMaxGridX) << n;
    }
    if (n <= kMaxIntExtent) {  // the rows a row kernel takes: a warp each, uncapped
      const unsigned g = everyRowGrid(n);
      EXPECT_LE(g, kMaxGridX) << n;
      EXPECT_GE(static_cast<std::size_t>(g) * kWarpsPerBlock, n) << n;
    }
    for (std::size_t cols : {std::size_t{1}, std::size_t{769}, kMaxIntExtent}) {
      const ColumnSliceGrid g = columnSliceGrid(n, cols);
      EXPECT_GE(g.x, 1u);
      EXPECT_GE(g.y, 1u);
      EXPECT_LE(g.x, kMaxGridX) << n << " x " << cols;
      EXPECT_LE(g.y, kMaxGridYZ) << n << " rows";
      EXPECT_GE(static_cast<std::size_t>(g.x) * kBlock, cols);  // a thread for every column
    }
  }
}

TEST(LaunchShapes, TheColumnSumsSliceLoopCoversEveryRowOnceAbove65535Slices) {
  // 16.7 M rows and a little more: more slices than grid.y may have.
  for (std::size_t rows : {kMaxGridYZ * kRowsPerSlice, kMaxGridYZ * kRowsPerSlice + 1, 3 * kMaxGridYZ * kRowsPerSlice + 77}) {
    const ColumnSliceGrid g = columnSliceGrid(rows, 1);
    ASSERT_LE(g.y, kMaxGridYZ);
    std::vector<unsigned char> seen(rows, 0);
    // The loop of biasBackwardKernel and layernormBackwardParamsKernel, for every block row.
    for (unsigned y = 0; y < g.y; ++y)
      for (std::size_t first = firstSliceRow(y); first < rows; first += sliceRowStride(g.y)) {
        const std::size_t last = rows - first < kRowsPerSlice ? rows : first + kRowsPerSlice;
        for (std::size_t r = first; r < last; ++r) ++seen[r];
      }
    std::size_t wrong = 0;
    for (unsigned char s : seen) wrong += s != 1;
    EXPECT_EQ(wrong, 0u) << rows << " rows";
  }
}

TEST(LaunchShapes, RowCountsPastTheKernelsIntIndexAreRefused) {
  EXPECT_EQ(intExtent("layernorm rows", kMaxIntExtent), static_cast<int>(kMaxIntExtent));
  EXPECT_EQ(intExtent("layernorm rows", 0), 0);
  try {
    intExtent("layernorm rows", kMaxIntExtent + 1);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("layernorm rows: 2147483392 exceeds"), std::string::npos) << e.what();
  }
  // The last block's warps index past the end before they return: still an int.
  EXPECT_LE(static_cast<std::size_t>(everyRowGrid(kMaxIntExtent)) * kWarpsPerBlock, std::size_t{0x7fffffff});
}

}  // namespace
}  // namespace ts::cuda
