// cuda::usableDeviceCount, in every build: where it finds no GPU it says why (the inventory, the NCCL
// backend's error and `links` print that reason).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "kernels/cuda/device_count.h"

namespace ts {

TEST(UsableDeviceCount, SaysWhyThereIsNone) {
  std::string why;
  const int n = cuda::usableDeviceCount(&why);
  ASSERT_GE(n, 0);
  if (n > 0) GTEST_SKIP() << n << " GPU(s) here: the reason for none cannot be shown";
#ifdef TRAINSCOPE_HAVE_CUDA
  EXPECT_TRUE(why.rfind("cudaGetDeviceCount: ", 0) == 0 || why.rfind("no NVIDIA driver", 0) == 0 ||
              why.rfind("NVIDIA driver too old: ", 0) == 0 || why == "the CUDA runtime sees no device")
      << why;
#else
  EXPECT_EQ(why, "built without CUDA");
#endif
  EXPECT_EQ(cuda::usableDeviceCount(), 0);  // the reason is optional
}

// A host with no NVIDIA driver at all (no libcuda.so.1, no kernel module) hears that, not that its driver is too
// old (the runtime's words for both, issue #35).
TEST(UsableDeviceCount, AHostWithoutADriverHearsSo) {
#ifndef TRAINSCOPE_HAVE_CUDA
  GTEST_SKIP() << "built without CUDA";
#else
  void* libcuda = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (libcuda) ::dlclose(libcuda);
  std::error_code ec;
  if (libcuda || std::filesystem::exists("/proc/driver/nvidia", ec)) GTEST_SKIP() << "an NVIDIA driver is installed here";
  std::string why;
  EXPECT_EQ(cuda::usableDeviceCount(&why), 0);
  EXPECT_EQ(why.rfind("no NVIDIA driver: neither its library libcuda.so.1 nor its kernel module", 0), 0u) << why;
#endif
}

}  // namespace ts
