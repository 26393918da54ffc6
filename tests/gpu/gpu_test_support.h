#pragma once
// What every GPU test file needs: whether a GPU is usable (tests skip, saying why, where none is), a device
// copy of a host vector, and the relative error against a CPU reference.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_count.h"
#include "kernels/cuda/device_resources.h"

namespace ts {

inline bool haveGpu() { return cuda::usableDeviceCount() > 0; }

#define REQUIRE_GPU() \
  if (!::ts::haveGpu()) GTEST_SKIP() << "no CUDA GPU is usable here (cudaGetDeviceCount found none)"

// A device buffer of n elements (with 16 bytes of slack), copied from the host or filled with 0xff bytes
// (unwritten floats read as NaN, ints as -1) or zeros; freed at scope end.
template <typename T>
struct Dev {
  cuda::DeviceBuffer buffer;
  T* p = nullptr;
  std::size_t n = 0;
  explicit Dev(std::size_t count, bool poison = true)
      : buffer(count * sizeof(T) + 16), p(static_cast<T*>(buffer.get())), n(count) {
    CUDA_CHECK(cudaMemset(p, poison ? 0xff : 0, n * sizeof(T)));
  }
  explicit Dev(const std::vector<T>& h) : Dev(h.size()) {
    CUDA_CHECK(cudaMemcpy(p, h.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> host() const {
    std::vector<T> h(n);
    CUDA_CHECK(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
};

// max |got - want| / max(1, |want|); a non-finite result or a size mismatch is +inf.
inline double maxRel(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return INFINITY;
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    worst = std::max(worst, std::fabs(double(got[i]) - want[i]) / std::max(1.0, std::fabs(double(want[i]))));
  }
  return worst;
}

}  // namespace ts
