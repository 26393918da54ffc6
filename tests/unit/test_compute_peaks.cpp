// The datasheet peaks MFU is quoted against: the right entry for each name the CUDA runtime reports, the
// precision's figure, and none for a GPU the table does not know.
#include <gtest/gtest.h>

#include "bench/train/compute_peaks.h"

namespace ts {

TEST(ComputePeaks, KnownGpusByTheirRuntimeNames) {
  const auto sxm = datasheetPeak("cuda:0 (NVIDIA H100 80GB HBM3)", Precision::kBFloat16);
  ASSERT_TRUE(sxm);
  EXPECT_EQ(sxm->gpu, "H100 SXM5");
  EXPECT_DOUBLE_EQ(sxm->tflops, 989.4);
  EXPECT_DOUBLE_EQ(sxm->boostMhz, 1980);
  EXPECT_EQ(datasheetPeak("NVIDIA H100 PCIe", Precision::kBFloat16)->gpu, "H100 PCIe");  // not the SXM figure
  EXPECT_DOUBLE_EQ(datasheetPeak("NVIDIA H200", Precision::kTF32)->tflops, 494.7);
  EXPECT_DOUBLE_EQ(datasheetPeak("NVIDIA A100-SXM4-80GB", Precision::kFloat32)->tflops, 19.5);
}

TEST(ComputePeaks, UnknownGpusAndTheCpuHaveNone) {
  EXPECT_FALSE(datasheetPeak("NVIDIA GeForce RTX 4090", Precision::kBFloat16));
  EXPECT_FALSE(datasheetPeak("cpu", Precision::kFloat32));
}

}  // namespace ts
