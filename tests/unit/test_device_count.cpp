// cuda::usableDeviceCount, in every build: where it finds no GPU it says why (the inventory, the NCCL
// backend's error and `links` print that reason).
#include <gtest/gtest.h>

#include <string>

#include "kernels/cuda/device_count.h"

namespace ts {

TEST(UsableDeviceCount, SaysWhyThereIsNone) {
  std::string why;
  const int n = cuda::usableDeviceCount(&why);
  ASSERT_GE(n, 0);
  if (n > 0) GTEST_SKIP() << n << " GPU(s) here: the reason for none cannot be shown";
#ifdef TRAINSCOPE_HAVE_CUDA
  EXPECT_TRUE(why.rfind("cudaGetDeviceCount: ", 0) == 0 || why == "the CUDA runtime sees no device") << why;
#else
  EXPECT_EQ(why, "built without CUDA");
#endif
  EXPECT_EQ(cuda::usableDeviceCount(), 0);  // the reason is optional
}

}  // namespace ts
